"""The kit's entry script as the device runs it: one line and exit 0 without CUDA."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from run_kit import has_driver, main

from tests.gpu_kit import KIT


def kit(*args: str, out: Path) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, str(KIT / "run_kit.py"), "--out", str(out), *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)


@pytest.mark.skipif(has_driver(), reason="this machine has an NVIDIA driver")
def test_without_cuda_the_kit_says_so_in_one_line_and_exits_0(tmp_path: Path) -> None:
    done = kit(out=tmp_path / "out")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "no CUDA here (no NVIDIA driver): nothing to measure; --dry-run runs the kit on the CPU"
    ]
    assert done.stderr == "" and not (tmp_path / "out").exists()


def test_an_unknown_step_is_one_line_naming_it_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--only", "run:nope", "--out", str(tmp_path / "out")]) == 2
    captured = capsys.readouterr()
    assert captured.err.splitlines() == ["run_kit: --only: unknown step 'run:nope'"]
    assert captured.out == "" and not (tmp_path / "out").exists()
