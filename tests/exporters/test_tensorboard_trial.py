"""A fix tried on a running job under `--tensorboard`, as the dashboard tries it (without the
screen): the trial's before and after land in the event files, and the relaunched job's steps
go on along the same axis instead of folding back to step 0."""

from __future__ import annotations

import json
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.conftest import RULES_DIR
from tests.exporters.test_tensorboard import read, texts
from torchtop.diagnosis.rules import load_rules
from torchtop.exporters.tensorboard import TensorBoardLog
from torchtop.jobs.job import Output, start
from torchtop.live.collect import start_collectors
from torchtop.live.watch import LiveMonitor
from torchtop.sessions.watched import WatchedJob
from torchtop.tuning.tune import TuneOptions

DEMO = [sys.executable, "-m", "torchtop.demo.train", "--batch-size", "16", "--latency-ms", "5"]
QUICK = TuneOptions(steps=10, warmup_steps=3, min_duration_s=1.0, run_timeout_s=60.0, max_rounds=1)
KNOB = "dataloader.num_workers"


@pytest.mark.slow
def test_a_trial_tried_on_the_demo_is_written_and_the_relaunched_job_goes_on_forward(
    tmp_path: Path,
) -> None:
    run_dir, board = tmp_path / "run", tmp_path / "run" / "tensorboard"
    job = start(DEMO, run_dir, "demo", output=Output.log(tmp_path / "job.log"))
    collectors = start_collectors(job.layout, job.pid, with_agent=True)
    log = TensorBoardLog(board, run_dir)
    monitor = LiveMonitor(run_dir, load_rules(RULES_DIR), job=job, kind="demo", on_tick=log.publish)
    watched = WatchedJob(monitor, job, collectors, DEMO, run_dir, "demo", options=QUICK)
    ticking = threading.Event()

    def tick_on() -> None:  # the dashboard's tick thread, without the dashboard
        while not ticking.wait(0.5):
            monitor.tick()

    ticker = threading.Thread(target=tick_on, daemon=True)
    try:
        deadline = time.monotonic() + 60
        fix = None
        while fix is None and time.monotonic() < deadline:
            report = monitor.tick().report
            fixes = [f for x in report.verdict.findings for f in x.fixes if f.knob == KNOB]
            fix = fixes[0] if fixes else None
            time.sleep(0.5)
        assert fix is not None, "the demo's workers fix was not offered"
        before_trial = len(read(board / "rank0").Scalars("step/wall_ms"))
        ticker.start()
        outcome = watched.try_fix(watched.propose(fix, report), lambda _event: None)
        assert outcome.trial is not None
        time.sleep(3)  # a few ticks of the relaunched job
    finally:
        ticking.set()
        if ticker.is_alive():
            ticker.join(10)
        watched.cancel(10)
        if watched.job.poll() is None:
            watched.job.finish()
        watched.close()
        log.close()
    written = json.loads((run_dir / "trials" / "01.json").read_text())
    job_run = read(board / "job")
    for key in ("baseline_steps_per_s", "trial_steps_per_s", "speedup"):
        (point,) = job_run.Scalars(f"trial/{key}")
        assert (point.step, point.value) == (1, pytest.approx(written[key], rel=1e-6))
    ((_, text),) = texts(job_run, "trial")
    assert all(change in text for change in written["changes"]) and written["changes"]
    assert ("kept" if written["kept"] else "reverted") in text
    walls = read(board / "rank0").Scalars("step/wall_ms")
    steps = [e.step for e in walls]
    assert len(walls) > before_trial, "the relaunched job's steps were written"
    assert steps == sorted(steps) and len(set(steps)) == len(steps), "one axis, only forward"
