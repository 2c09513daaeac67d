"""The training jobs in tests/workloads/ run as scripts and find their shared pieces
(`workloads/sleepy.py`) from any folder, with no PYTHONPATH: Python puts a script's own folder
first on `sys.path`."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import WORKLOADS


def run_workload(cwd: Path, script: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run(
        [sys.executable, str(WORKLOADS / script), *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )


def test_a_workload_started_from_another_folder_trains_on_the_shared_sleepy_dataset(
    tmp_path: Path,
) -> None:
    done = run_workload(tmp_path, "slow_data.py", "--steps", "3", "--sample-sleep-ms", "1")
    assert done.returncode == 0, done.stderr[-2000:]
    assert "trained 3 steps" in done.stdout


def test_dataloader_workers_of_a_workload_load_the_shared_dataset_too(tmp_path: Path) -> None:
    done = run_workload(
        tmp_path,
        "self_timed.py",
        *("--steps", "6", "--warmup", "1", "--workers", "2", "--sample-sleep-ms", "1"),
        *("--width", "64"),
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "job: 5 steps in" in done.stdout, done.stdout
