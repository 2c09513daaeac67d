"""Confidence means the same under `run` and `attach`: one planted job watched both ways.

The job is the planted input-bound one (each sample waits 1 ms on "storage", no workers):
`run` sees its steps through the agent and a profiler window, `attach` (the job started
without torchtop) sees py-spy samples of its training thread. The evidence differs in kind;
the verdict and, with enough of it, the confidence must not (docs/how-it-decides.md).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import WORKLOADS

ROOT = Path(__file__).resolve().parents[2]
TORCHTOP = [sys.executable, "-m", "torchtop"]
JOB = [
    sys.executable,
    str(WORKLOADS / "sleepy_input.py"),
    "--sample-sleep-ms",
    "1",
]
# The claim of docs/how-it-decides.md and docs/benchmarks.md: with enough evidence, run and
# attach agree within this when they name the same class.
AGREE_WITHIN = 0.05
WATCH_S = "30"


def watched_by_run(tmp_path: Path) -> dict[str, Any]:
    report = tmp_path / "run.json"
    subprocess.run(
        [*TORCHTOP, "run", "--headless", "--for", WATCH_S, "--run-dir", str(tmp_path / "run"),
         "--report", str(report), "--", *JOB],
        capture_output=True, text=True, timeout=240, check=True,
    )  # fmt: skip
    document: dict[str, Any] = json.loads(report.read_text())
    return document


def watched_by_attach(tmp_path: Path) -> dict[str, Any]:
    report = tmp_path / "attach.json"
    job = subprocess.Popen(JOB, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        assert job.stdout is not None
        assert job.stdout.readline().startswith("training with"), "the job reached its loop"
        subprocess.run(
            [*TORCHTOP, "attach", str(job.pid), "--headless", "--for", WATCH_S,
             "--run-dir", str(tmp_path / "attach"), "--report", str(report)],
            capture_output=True, text=True, timeout=240, check=True,
        )  # fmt: skip
        assert job.poll() is None, "attach must never stop the job it watches"
    finally:
        job.kill()
        job.wait()
    document: dict[str, Any] = json.loads(report.read_text())
    return document


@pytest.mark.slow
def test_run_and_attach_on_the_same_job_name_the_same_class_with_the_same_confidence(
    tmp_path: Path,
) -> None:
    by_run, by_attach = watched_by_run(tmp_path), watched_by_attach(tmp_path)
    assert by_run["bottleneck"] == by_attach["bottleneck"] == "dataloader", (
        by_run["verdict"],
        by_attach["verdict"],
    )
    # Different evidence: the profiled steps' own splits, and stack samples.
    assert by_run["steps"]["breakdown_steps"] >= 2
    assert by_attach["steps"]["stack_samples"] >= 10
    assert by_run["confidence"] == pytest.approx(by_attach["confidence"], abs=AGREE_WITHIN)
    assert by_run["confidence"] > 0.9
