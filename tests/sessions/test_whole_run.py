"""A run folder is the whole run: after a fix kept on a real starved job (and a second trial
cancelled as `q` cancels it), `analyze RUN` reads the job as it now runs (`RUN/jobs/01`), at the
rate the job printed by its own clock, and lists both trials, the cancelled one marked so.
The trial is run as the dashboard runs it (`WatchedJob.try_fix`), without the screen.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.conftest import RULES_DIR, WORKLOADS
from tests.tuning.running import QUICK
from torchtop.advice.machine import Machine
from torchtop.advice.plan import plan_fix
from torchtop.diagnosis.rules import load_rules
from torchtop.jobs.job import Output, start
from torchtop.live.collect import Collectors
from torchtop.live.watch import LiveMonitor
from torchtop.model.findings import Fix
from torchtop.model.plan import LaunchPlan
from torchtop.model.trials import Measured, Proposal, TrialEvent
from torchtop.runs.records import LoaderSettings, Settings
from torchtop.sessions.watched import WatchedJob

pytestmark = pytest.mark.slow

JOB = [sys.executable, str(WORKLOADS / "slowing.py"),
       "--sample-sleep-ms", "10"]  # fmt: skip
WORKERS = Fix("dataloader.num_workers", 4, "override", "Load batches in 4 worker processes.")
PINNED = Fix("dataloader.pin_memory", True, "override", "Pin the batches' memory.")
OWN_STEP = re.compile(r"^step (\d+) ([0-9.]+)$", re.M)


def _printed_steps(log: Path) -> list[float]:
    return [float(s) for _, s in OWN_STEP.findall(log.read_text())] if log.exists() else []


def _wait_for_steps(log: Path, count: int, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while len(_printed_steps(log)) < count:
        assert time.monotonic() < deadline, f"{log}: under {count} steps in {timeout_s:g} s"
        time.sleep(0.5)


def _cancel_after_first_run(watched: WatchedJob, fix: Fix) -> None:
    """Try `fix` in a thread and cancel the trial once its first run was measured (as `q`)."""
    settings = Settings(dataloader=LoaderSettings(num_workers=4, pin_memory=False))
    after = plan_fix(fix, watched.plan, settings, Machine(2, 2))
    assert isinstance(after, LaunchPlan)
    measured = threading.Event()

    def heard(event: TrialEvent) -> None:
        if isinstance(event, Measured):
            measured.set()

    thread = threading.Thread(
        target=watched.try_fix, args=(Proposal(fix, watched.plan, after), heard)
    )
    thread.start()
    assert measured.wait(180), "the second trial measured no run in 180 s"
    assert watched.cancel()
    thread.join(60)


def test_analyze_of_a_run_after_a_kept_fix_reads_the_relaunched_job_and_every_trial(
    tmp_path: Path,
) -> None:
    run_dir = tmp_path / "run"
    job = start(JOB, run_dir, "run", output=Output.log(tmp_path / "job.log"))
    monitor = LiveMonitor(run_dir, load_rules(RULES_DIR), job=job)
    watched = WatchedJob(monitor, job, Collectors(), JOB, run_dir, options=QUICK)
    after = plan_fix(
        WORKERS, watched.plan, Settings(dataloader=LoaderSettings(num_workers=0)), Machine(2, 2)
    )
    assert isinstance(after, LaunchPlan)
    try:
        _wait_for_steps(tmp_path / "job.log", 20, 120)
        outcome = watched.try_fix(Proposal(WORKERS, watched.plan, after), lambda _: None)
        assert outcome.kept, outcome.trial and outcome.trial.reason
        relaunched = run_dir / "jobs" / "01"
        _wait_for_steps(relaunched / "job.log", 150, 180)
        _cancel_after_first_run(watched, PINNED)
    finally:
        watched.job.finish()
        watched.close()

    assert (run_dir / "trials" / "02-cancelled.json").is_file()
    analyzed = subprocess.run(
        [sys.executable, "-m", "torchtop", "analyze", str(run_dir), "--format", "json"],
        capture_output=True, text=True, timeout=300, check=True,
    )  # fmt: skip
    report = json.loads(analyzed.stdout)
    own = _printed_steps(relaunched / "job.log")[1:]  # step 0 waits for the first batch
    own_rate = len(own) / sum(own)
    shown = report["steps"]["steps_per_s"]
    assert abs(shown / own_rate - 1) < 0.10, (shown, own_rate)
    first, cancelled = report["trials"]
    assert first["number"] == 1 and first["kept"] is True and "cancelled" not in first
    assert cancelled["number"] == 2 and cancelled["cancelled"] is True
    assert cancelled["kept"] is False and cancelled["fixes"][0]["knob"] == "dataloader.pin_memory"
    assert len(cancelled["runs"]["before"]) == 1 and cancelled["trial_steps_per_s"] is None
    assert any("shown: 1 jobs/01 (the job as it now runs)" in n for n in report["notes"])

    as_started = subprocess.run(
        [sys.executable, "-m", "torchtop", "analyze", str(run_dir), "--segment", "0",
         "--format", "json"],
        capture_output=True, text=True, timeout=300, check=True,
    )  # fmt: skip
    before = json.loads(as_started.stdout)["steps"]["steps_per_s"]
    assert before < shown / 2, (before, shown)
