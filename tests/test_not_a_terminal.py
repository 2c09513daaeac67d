"""With stdout not a terminal (a file, a pipe), the dashboard verbs run headless, as `top -b`
does, and say so on stderr: nothing is drawn into the file."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

SAMPLES = Path(__file__).resolve().parents[1] / "sample_traces"


@pytest.mark.slow
def test_demo_into_a_file_writes_its_report_there_and_no_escape_codes(tmp_path: Path) -> None:
    out = tmp_path / "out.txt"
    with out.open("w") as stdout:
        result = subprocess.run(
            [sys.executable, "-m", "torchtop", "demo", "--for", "6"],
            stdout=stdout,
            stderr=subprocess.PIPE,
            text=True,
            timeout=180,
            cwd=tmp_path,
        )
    assert result.returncode == 0, result.stderr[-2000:]
    written = out.read_text()
    assert "\x1b" not in written
    assert "VERDICT" in written
    assert "torchtop: stdout is not a terminal: demo runs headless" in result.stderr
    assert "torchtop    " in result.stderr  # the headless progress lines


def test_view_into_a_pipe_prints_the_report_it_would_show(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "torchtop", "view", str(SAMPLES / "dataloader_starved")],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert "\x1b" not in result.stdout
    assert result.stdout.startswith("torchtop · ") and "VERDICT  DATALOADER" in result.stdout
    assert "torchtop: stdout is not a terminal: view runs headless" in result.stderr
