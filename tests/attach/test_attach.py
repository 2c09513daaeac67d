"""`torchtop attach PID` on real processes torchtop did not start."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

TORCHTOP = [sys.executable, "-m", "torchtop"]


def test_attach_names_a_starved_job_not_started_by_torchtop_dataloader(tmp_path: Path) -> None:
    job = subprocess.Popen(
        [sys.executable, "-m", "torchtop.demo.train", "--latency-ms", "10"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    result = _attach_for(job, 14, tmp_path, ready="training:")
    assert result.returncode == 0, result.stderr
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["source"]["kind"] == "attach"
    assert report["source"]["pid"] == job.pid
    # A job of one process is watched as it always was: no job of ranks found around it.
    assert "attached" not in report["source"] and "ranks" not in report
    assert result.stderr.splitlines()[0] == (
        f"torchtop: watching PID {job.pid} through stack samples (no agent inside)"
    )
    assert report["bottleneck"] == "dataloader", report["verdict"]
    # The wait for batches is the largest part of the step. Its size moves with the machine's
    # load (beside the other worker's jobs in CI it read exactly 0.50), so no fixed share.
    breakdown = report["breakdown"]
    assert max(breakdown, key=breakdown.__getitem__) == "dataloader", breakdown
    assert report["findings"][0]["rule"] == "dataloader-starved"
    # No agent timed a step: the figures are stack samples, and are never dressed as steps.
    steps = report["steps"]
    assert steps["count"] is None
    assert steps["mean_ms"] is None and steps["steps_per_s"] is None
    assert steps["stack_samples"] >= 5
    assert any(f"{steps['stack_samples']} stack sample" in note for note in report["notes"])
    assert f"({steps['stack_samples']} stack samples)" in result.stdout


def test_attach_to_a_process_that_does_not_exist_is_one_line_and_status_2() -> None:
    result = subprocess.run([*TORCHTOP, "attach", "999999999"], capture_output=True, text=True)
    assert result.returncode == 2
    assert result.stderr.strip() == (
        "torchtop: PID 999999999: no such process (`ps -ef | grep python` lists the running ones)"
    )


def test_attach_to_a_process_that_is_not_python_is_refused(tmp_path: Path) -> None:
    sleeper = subprocess.Popen(["sleep", "30"])
    try:
        result = subprocess.run(
            [*TORCHTOP, "attach", str(sleeper.pid)], capture_output=True, text=True
        )
    finally:
        sleeper.kill()
        sleeper.wait()
    assert result.returncode == 2
    assert len(result.stderr.strip().splitlines()) == 1
    assert "not a Python process" in result.stderr
    assert result.stderr.rstrip().endswith("start it watched: `torchtop run -- python train.py`")


def test_attach_on_a_python_process_that_is_not_training_says_so_not_trace_advice(
    tmp_path: Path,
) -> None:
    idle = "import time, torch\nprint('ready', flush=True)\nwhile True:\n    time.sleep(0.05)\n"
    job = subprocess.Popen(
        [sys.executable, "-c", idle], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    )
    result = _attach_for(job, 10, tmp_path, ready="ready")
    assert result.returncode == 0, result.stderr
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["bottleneck"] == "unknown"
    said = report["verdict"]["reason"]
    assert "not look like a training loop" in said, said
    assert "CUDA activities" not in said and "CUDA activities" not in result.stdout


def _attach_for(
    job: subprocess.Popen[str], seconds: int, tmp_path: Path, ready: str
) -> subprocess.CompletedProcess[str]:
    """`attach --headless` on `job` for `seconds` once its first line starts with `ready`, the
    report in tmp_path; the job is ended after, and must have outlived the attach."""
    options = ["--run-dir", str(tmp_path / "r"), "--report", str(tmp_path / "report.json")]
    try:
        assert job.stdout is not None
        assert job.stdout.readline().startswith(ready), "the job reached its loop"
        result = subprocess.run(
            [*TORCHTOP, "attach", str(job.pid), "--headless", "--for", str(seconds), *options],
            capture_output=True,
            text=True,
            timeout=90,
        )
        assert job.poll() is None, "attach must never stop the job it watches"
    finally:
        job.kill()
        job.wait()
    return result
