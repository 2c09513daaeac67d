"""A fix tried on the watched job when the job cannot be measured: no trial is recorded, its
runs are set aside, and the job is started again as it ran, followed by the monitor."""

from __future__ import annotations

import sys
from pathlib import Path

from tests.conftest import RULES_DIR
from tests.tuning.running import QUICK
from torchtop.advice.machine import Machine
from torchtop.advice.plan import plan_fix
from torchtop.diagnosis.rules import load_rules
from torchtop.jobs.job import Output, start
from torchtop.live.collect import Collectors
from torchtop.live.watch import LiveMonitor
from torchtop.model.findings import Fix
from torchtop.model.plan import LaunchPlan
from torchtop.model.trials import Proposal, TrialEvent
from torchtop.runs.journal import read_record
from torchtop.runs.records import ExitRecord, LoaderSettings, RunRecord, Settings
from torchtop.sessions.watched import WatchedJob

# Ends after 12 steps: fewer than a trial's warm-up (3) and steps (10) need.
SHORT = [sys.executable, "-m", "torchtop.demo.train", "--steps", "12", "--batch-size", "8",
         "--latency-ms", "1"]  # fmt: skip
WORKERS = Fix("dataloader.num_workers", 2, "override", "Load batches in 2 worker processes.")


def test_a_job_too_short_to_measure_is_started_again_as_it_ran(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    job = start(SHORT, run_dir, "run", output=Output.log(tmp_path / "job.log"))
    monitor = LiveMonitor(run_dir, load_rules(RULES_DIR), job=job)
    watched = WatchedJob(monitor, job, Collectors(), SHORT, run_dir, options=QUICK)
    after = plan_fix(
        WORKERS, watched.plan, Settings(dataloader=LoaderSettings(num_workers=0)), Machine(2, 2)
    )
    assert isinstance(after, LaunchPlan)
    events: list[TrialEvent] = []
    try:
        outcome = watched.try_fix(Proposal(WORKERS, watched.plan, after), events.append)
    finally:
        watched.job.finish()
        watched.close()

    assert outcome.trial is None and watched.trials == []
    assert outcome.error is not None and outcome.error.startswith(
        "the job could not be measured as it ran: "
    )
    assert not (run_dir / "trials" / "01.json").exists()
    assert (run_dir / "trials" / "01-unfinished-1" / "before-1" / "run.json").is_file()
    assert outcome.plan == watched.plan and outcome.plan.overrides == {}
    assert outcome.run_dir == run_dir / "jobs" / "01" == monitor.run_dir
    relaunch = read_record(run_dir / "jobs" / "01" / "run.json", RunRecord)
    assert relaunch is not None and relaunch.command == SHORT
    ending = read_record(run_dir / "exit.json", ExitRecord)
    assert ending is not None and ending.how in ("stopped", "exited")
    assert events[-1].text == "starting the job as it ran"
