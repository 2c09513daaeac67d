"""The step figures a user sees are the whole run's, checked against the job's own printed rate.

A job run to its end under `torchtop run --headless` prints its own count and rate (timed with
`perf_counter` over the same steps, after the same warm-up); the report's `steps`, and the last
headless progress line, must agree with it: a steady job, and a bursty one whose newest steps
run faster than the run as a whole (worker bursts, and a pause each epoch as workers restart).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import CONTEXT, WORKLOADS
from tests.fake_run import FakeRun
from torchtop.assess.run import RECENT_STEPS, WARMUP_STEPS, assess, wall_metrics
from torchtop.diagnosis.rules import load_rules
from torchtop.report import render_text, report_to_json
from torchtop.runs.state import MAX_STEPS, StepWalls, load_run

JOB = WORKLOADS / "self_timed.py"
JOB_LINE = re.compile(r"^job: (\d+) steps in ([\d.]+) s = ([\d.]+) steps/s$", re.MULTILINE)
PROGRESS_RATE = re.compile(r"^torchtop\s+[\d.]+s\s+([\d.]+) steps/s", re.MULTILINE)


def test_the_figures_of_many_steps_are_their_count_percentiles_and_summed_time_rate() -> None:
    rng = np.random.default_rng(0)
    walls = rng.gamma(2.0, 0.01, size=50_000)
    store = StepWalls()
    for number, wall in enumerate(walls):
        store.append(number, float(wall))
    kept = store.since(WARMUP_STEPS)
    assert len(store) == 50_000 and len(kept) == 50_000 - WARMUP_STEPS
    metrics = wall_metrics(kept)
    expected = walls[WARMUP_STEPS:]
    assert metrics["steps_count"] == len(expected)
    assert metrics["steps_per_s"] == pytest.approx(len(expected) / expected.sum())
    assert metrics["step_mean_ms"] == pytest.approx(expected.mean() * 1000)
    assert metrics["step_p50_ms"] == pytest.approx(np.median(expected) * 1000)
    assert metrics["step_p95_ms"] == pytest.approx(np.percentile(expected, 95) * 1000)


def test_a_long_bursty_run_is_reported_over_all_its_steps_not_its_newest(
    fake_run: FakeRun,
) -> None:
    # An epoch of slow steps, then more fast steps than the record buffer holds.
    fake_run.hello(100)
    fake_run.steps(100, 400, wall_s=0.05, data_wait_s=0.04)
    fast = MAX_STEPS + 100
    fake_run.steps(100, fast, wall_s=0.01, data_wait_s=0.0, first=400)
    report = assess(load_run(fake_run.layout.root), {}, load_rules(), context=CONTEXT)
    steps = report_to_json(report)["steps"]
    counted = 400 + fast - WARMUP_STEPS
    assert steps["count"] == counted
    total_s = (400 - WARMUP_STEPS) * 0.05 + fast * 0.01
    assert steps["steps_per_s"] == pytest.approx(counted / total_s, rel=1e-3)
    assert report.job.metrics["recent_steps_per_s"] == pytest.approx(100.0)
    assert steps["breakdown_steps"] == RECENT_STEPS
    text = render_text(report)
    assert f"{counted} steps" in text
    assert f"{counted / total_s:.2f} steps/s" in text
    assert f"breakdown from {RECENT_STEPS} timed steps" in text


def run_to_the_end(tmp_path: Path, args: list[str]) -> tuple[dict[str, object], str, str]:
    """The report, the job's own rate line, and the last headless progress line."""
    report_path = tmp_path / "report.json"
    env = {**os.environ, "TORCHTOP_WINDOW_FIRST_STEP": "3"}
    result = subprocess.run(
        [sys.executable, "-m", "torchtop", "run", "--headless", "--run-dir",
         str(tmp_path / "run"), "--report", str(report_path), "--",
         sys.executable, str(JOB), *args],
        capture_output=True, text=True, timeout=240, env=env,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    job_line = JOB_LINE.search(result.stderr)  # the job's stdout, on torchtop's stderr
    assert job_line is not None, result.stderr[-2000:]
    progress = PROGRESS_RATE.findall(result.stderr)
    assert progress, result.stderr[-2000:]
    report = json.loads(report_path.read_text())
    return report, job_line.group(0), progress[-1]


def check_against_the_job(report: dict[str, object], job_line: str, last_progress: str) -> None:
    match = JOB_LINE.match(job_line)
    assert match is not None
    job_count, job_rate = int(match.group(1)), float(match.group(3))
    steps = report["steps"]
    assert isinstance(steps, dict)
    assert abs(steps["count"] - job_count) <= 2, (steps["count"], job_line)
    assert steps["steps_per_s"] == pytest.approx(job_rate, rel=0.10), job_line
    assert float(last_progress) == pytest.approx(steps["steps_per_s"], abs=0.006)
    assert 0 < steps["breakdown_steps"] < steps["count"], "the window covers a few steps"


@pytest.mark.slow
def test_a_steady_job_run_to_its_end_is_reported_at_the_rate_it_printed(tmp_path: Path) -> None:
    report, job_line, last_progress = run_to_the_end(
        tmp_path, ["--steps", "100", "--batch-size", "32"]
    )
    check_against_the_job(report, job_line, last_progress)


@pytest.mark.slow
def test_a_bursty_job_run_to_its_end_is_reported_at_the_rate_it_printed(tmp_path: Path) -> None:
    # Four workers each sleep through a batch, and restart every 40 steps: the newest 30 steps
    # ran about 1.6x faster than the run did.
    report, job_line, last_progress = run_to_the_end(
        tmp_path,
        ["--steps", "160", "--epoch-steps", "40", "--workers", "4",
         "--sample-sleep-ms", "2", "--width", "256"],
    )  # fmt: skip
    check_against_the_job(report, job_line, last_progress)


def test_the_report_the_headless_line_and_the_dashboard_header_show_the_same_rate(
    fake_run: FakeRun,
) -> None:
    from torchtop.live.headless import progress_line
    from torchtop.live.watch import LiveMonitor
    from torchtop.tui.frame import FrameBuilder
    from torchtop.tui.widgets.header import JobHeader

    fake_run.hello(100)
    fake_run.steps(100, 200, wall_s=0.04, data_wait_s=0.03)
    fake_run.steps(100, 100, wall_s=0.01, data_wait_s=0.0, first=200)
    snapshot = LiveMonitor(fake_run.layout.root, load_rules()).tick()
    rate = report_to_json(snapshot.report)["steps"]["steps_per_s"]
    assert rate == pytest.approx(298 / (198 * 0.04 + 100 * 0.01), rel=1e-3)
    frame = FrameBuilder().build(snapshot)
    header = JobHeader()._numbers(frame, 200).plain
    line = progress_line(snapshot.report, snapshot.shown, snapshot.elapsed_s)
    assert f"{rate:.2f} steps/s" in header
    assert f"{rate:.2f} steps/s" in line
    # The history (trend, sparkline) follows the newest steps: 100 steps/s, not the mean.
    assert frame.history[-1].steps_per_s == pytest.approx(100.0)


@pytest.mark.slow
def test_after_a_relaunch_the_figures_are_the_new_jobs_alone(fake_run: FakeRun) -> None:
    import time

    from torchtop.jobs.job import Output, start
    from torchtop.live.watch import LiveMonitor

    # The job as it ran before: many slow steps, which must not leak into the new figures.
    fake_run.hello(100)
    fake_run.steps(100, 300, wall_s=0.5, data_wait_s=0.4)
    monitor = LiveMonitor(fake_run.layout.root, load_rules())
    assert monitor.tick().report.job.metrics["steps_count"] == 300 - WARMUP_STEPS
    relaunched = fake_run.layout.root.parent / "jobs" / "01"
    log = relaunched.parent / "01.log"
    command = [sys.executable, str(JOB), "--steps", "60", "--batch-size", "16"]
    job = start(command, relaunched, "run", output=Output.log(log))
    monitor.detach()
    monitor.follow(relaunched, job)
    deadline = time.monotonic() + 120
    while job.poll() is None and time.monotonic() < deadline:
        monitor.tick()
        time.sleep(0.5)
    steps = report_to_json(monitor.finish())["steps"]
    match = JOB_LINE.search(log.read_text())
    assert match is not None, log.read_text()[-2000:]
    assert abs(steps["count"] - int(match.group(1))) <= 2
    assert steps["steps_per_s"] == pytest.approx(float(match.group(3)), rel=0.10)
