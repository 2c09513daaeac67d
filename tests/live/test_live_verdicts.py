"""Real CPU training jobs under `torchtop run --headless`: each gets its class's verdict.

The agent times every step and captures a profiler window early (from step 3), so the final
report has the full breakdown; the verdicts must match what each job was built to be.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import WORKLOADS

JOBS = WORKLOADS
WINDOW_EARLY = {"TORCHTOP_WINDOW_FIRST_STEP": "3", "TORCHTOP_WINDOW_STEPS": "4"}


def run_headless(
    tmp_path: Path,
    command: list[str],
    timeout: float = 240,
    extra_env: dict[str, str] | None = None,
) -> dict[str, Any]:
    report = tmp_path / "report.json"
    env = {**os.environ, **WINDOW_EARLY, **(extra_env or {})}
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "torchtop",
            "run",
            "--headless",
            "--run-dir",
            str(tmp_path / "run"),
            "--report",
            str(report),
            "--",
            *command,
        ],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    return json.loads(report.read_text())  # type: ignore[no-any-return]


@pytest.mark.parametrize(
    ("job", "expected"),
    [
        ([sys.executable, "-m", "torchtop.demo.train", "--steps", "30"], "dataloader"),
        ([sys.executable, str(JOBS / "copy_heavy.py")], "memcpy"),
        ([sys.executable, str(JOBS / "compute_bound.py")], "cpu"),
        ([sys.executable, str(JOBS / "python_overhead.py")], "cpu"),
    ],
    ids=["dataloader-starved", "copy-heavy", "compute-bound", "python-overhead"],
)
def test_a_real_job_gets_the_verdict_it_was_built_for(
    tmp_path: Path, job: list[str], expected: str
) -> None:
    report = run_headless(tmp_path, job)
    assert report["bottleneck"] == expected, (report["verdict"], report["breakdown"])
    assert report["source"]["kind"] == "run"
    assert report["traces"], "a profiler window was captured and analysed"


def test_a_two_rank_torchrun_gloo_job_is_communication_bound_with_both_ranks(
    tmp_path: Path,
) -> None:
    command = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc_per_node=2",
        str(JOBS / "ddp_comm.py"),
    ]
    report = run_headless(tmp_path, command)
    assert report["bottleneck"] == "communication", (report["verdict"], report["breakdown"])
    ranks = report["ranks"]
    assert sorted(r["rank"] for r in ranks) == [0, 1]
    assert all(r["breakdown"]["communication"] > 0.2 for r in ranks)
