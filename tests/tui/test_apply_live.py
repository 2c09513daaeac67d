"""`a` in the live dashboard, end to end: the demo's real CPU job, its real run folder and
monitor, the real trial; the keys are pressed through Pilot and nothing is replaced.

The demo job is made quick (small batches, short trials of one round: the protocol's second
round is `tune`'s tests' business), so the two tests take under a minute together on 2 cores.
"""

from __future__ import annotations

import json
import math
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.widgets import OptionList

from tests.conftest import RULES_DIR
from tests.tables import tables
from tests.tui.conftest import wait_until
from torchtop.diagnosis.rules import load_rules
from torchtop.jobs.job import Output, start
from torchtop.jobs.processes import is_alive, job_tree
from torchtop.live.collect import start_collectors
from torchtop.live.watch import LiveMonitor
from torchtop.model.report import Report
from torchtop.model.rounds import outcome_words
from torchtop.report import report_to_json
from torchtop.runs.journal import JournalReader, read_record
from torchtop.runs.records import ExitRecord, RunRecord
from torchtop.sessions.watched import WatchedJob
from torchtop.trials.holding import HoldingTest
from torchtop.tui.app import Dashboard
from torchtop.tui.apply import ApplyScreen
from torchtop.tui.ticking import IntervalPacer
from torchtop.tui.widgets.fixlist import FixList
from torchtop.tui.widgets.trial import TrialPanel
from torchtop.tuning.tune import TuneOptions

pytestmark = pytest.mark.slow

DEMO = [sys.executable, "-m", "torchtop.demo.train", "--batch-size", "16", "--latency-ms", "5"]
QUICK = TuneOptions(steps=10, warmup_steps=3, min_duration_s=1.0, run_timeout_s=60.0, max_rounds=3)
KNOB = "dataloader.num_workers"


def records(run_dir: Path, kind: str) -> list[dict[str, Any]]:
    found = []
    for path in sorted((run_dir / "events").glob("agent-*.jsonl")):
        found += [r for r in tables(JournalReader(path).read_new(final=True)) if r["kind"] == kind]
    return found


def started_pids(run_dir: Path) -> list[int]:
    """The main process of every launch recorded under `run_dir` (trials' runs, relaunches)."""
    launches = [read_record(p, RunRecord) for p in sorted(run_dir.rglob("run.json"))]
    return [run.pid for run in launches if run is not None and run.pid is not None]


async def highlight(pilot: Pilot[Any], app: Dashboard, knob: str) -> None:
    """Arrow down the fix list to the fix for `knob` (the list is ranked, not fixed)."""
    options = app.query_one("#fix-options", OptionList)
    fixes = app.query_one(FixList)
    for _ in range(len(fixes.fixes)):
        index = options.highlighted
        if index is not None and fixes.fixes[index].fix.knob == knob:
            return
        await pilot.press("down")
    raise AssertionError(f"{knob} is not in the fix list")


async def open_apply(pilot: Pilot[Any], app: Dashboard, knob: str) -> ApplyScreen:
    """`a` on the fix for `knob`; again if the list was re-ranked under the key press."""
    for _ in range(3):
        await highlight(pilot, app, knob)
        await pilot.press("a")
        await wait_until(pilot, lambda: isinstance(app.screen, ApplyScreen), "modal", 10)
        screen = app.screen
        assert isinstance(screen, ApplyScreen)
        if screen.proposal.fix.knob == knob:
            return screen
        await pilot.press("escape")
    raise AssertionError(f"`a` never opened the modal for {knob}")


@asynccontextmanager
async def demo_dashboard(
    run_dir: Path,
    command: list[str] = DEMO,
    kind: str = "demo",
    holding_test: HoldingTest | None = None,
) -> AsyncIterator[tuple[Dashboard, Pilot[Any], WatchedJob]]:
    """The demo job (or `command`) launched as `torchtop demo` (or `kind`) launches it, under
    the dashboard, once it offers the workers fix (highlighted); whatever happens, no launch is
    left running."""
    job = start(command, run_dir, kind, output=Output.log(run_dir.parent / "job.log"))
    collectors = start_collectors(job.layout, job.pid, with_agent=True)
    monitor = LiveMonitor(run_dir, load_rules(RULES_DIR), job=job, kind=kind)
    watched = WatchedJob(
        monitor, job, collectors, command, run_dir, kind, options=QUICK, holding_test=holding_test
    )
    app = Dashboard(monitor, pacer=IntervalPacer(0.5), applier=watched)
    try:
        async with app.run_test(size=(120, 36)) as pilot:

            def offered() -> bool:
                return app.latest is not None and any(r.fix.knob == KNOB for r in app.latest.fixes)

            await wait_until(pilot, offered, "num_workers fix", 60)
            yield app, pilot, watched
    finally:
        watched.cancel(10)
        if watched.job.poll() is None:
            watched.job.finish()
        watched.close()


async def test_applying_the_workers_fix_trials_it_and_the_dashboard_follows_the_new_job(
    tmp_path: Path,
) -> None:
    run_dir = tmp_path / "run"
    async with demo_dashboard(run_dir) as (app, pilot, watched):
        job = watched.job
        old_tree = [p.pid for p in job_tree(job.pid)]
        offered = app.screen.active_bindings["a"]
        assert offered.enabled and offered.binding.action == "app.apply" and offered.binding.show

        # Escape in the modal changes nothing; `y` starts the trial.
        screen = await open_apply(pilot, app, KNOB)
        shown = str(screen.query_one("#apply-text").render())
        assert f"change: {KNOB} = " in shown and "old command: " in shown
        await pilot.press("escape")
        assert not isinstance(app.screen, ApplyScreen) and job.poll() is None
        screen = await open_apply(pilot, app, KNOB)
        assert screen.proposal.after is not None
        after = screen.proposal.after
        frames_before = app.frames_received
        await pilot.press("y")
        # Up to three rounds of two runs (about 20 s each at load 12 on 2 cores).
        await wait_until(pilot, lambda: app.trial_outcomes, "trial outcome", 300)
        # The dashboard kept ticking through the trial (about two frames a second).
        assert app.frames_received >= frames_before + 5

        (outcome,) = app.trial_outcomes
        assert outcome.trial is not None and outcome.run_dir == run_dir / "jobs" / "01"
        trial = outcome.trial
        panel = str(app.query_one(TrialPanel).render())
        assert f"before {trial.baseline_steps_per_s:.2f} steps/s" in panel
        assert f"{trial.speedup:.2f}x" in panel
        # The outcome named as tune names it (`faster: kept`, `inconclusive: reverted`, ...).
        assert outcome_words(trial.outcome, trial.kept) in panel and ": measured " in panel
        # No process of the job as it ran before the trial is left.
        assert not [pid for pid in old_tree if is_alive(pid)]

        relaunched = outcome.run_dir
        await wait_until(pilot, lambda: records(relaunched, "hello"), "the new job's agent", 60)
        shows_it = (str(relaunched),)

        def following() -> bool:
            return app.latest is not None and app.latest.report.paths == shows_it

        await wait_until(pilot, following, "a frame of the relaunched job", 10)
        await pilot.press("q")
        await app.workers.wait_for_complete()

    # The trial, as tune writes it, and in the final report.
    written = json.loads((run_dir / "trials" / "01.json").read_text())
    assert written["kept"] is trial.kept and written["fixes"][0]["knob"] == KNOB
    assert isinstance(app.return_value, Report)
    report = report_to_json(watched.with_trials(app.return_value))
    (entry,) = report["trials"]
    assert entry["kept"] is trial.kept
    # The claim is the rounds' geometric mean of paired ratios, inside the rounds' interval.
    ratios = entry["round_ratios"]
    assert entry["speedup"] == pytest.approx(math.prod(ratios) ** (1 / len(ratios)), rel=1e-3)
    assert entry["speedup_low"] <= entry["speedup"] <= entry["speedup_high"]
    if entry["kept"]:
        assert entry["speedup"] >= 1 + QUICK.min_gain
    else:
        assert "reverted" in entry["reason"]
    assert report["source"]["paths"] == [str(relaunched)]

    # The relaunched job runs with the fix if it was kept, else as it was given.
    value = trial.fixes[0].value
    expected = after.command if trial.kept else tuple(DEMO)
    relaunch = read_record(relaunched / "run.json", RunRecord)
    assert relaunch is not None and tuple(relaunch.command) == expected
    (hello,) = records(relaunched, "hello")
    if trial.kept:
        assert hello["argv"][-2:] == ["--num-workers", str(value)]
    else:
        assert "--num-workers" not in hello["argv"]

    # Quitting stopped the relaunched job; no launch of this test is left running.
    ending = read_record(relaunched / "exit.json", ExitRecord)
    assert ending is not None and ending.how == "stopped"
    assert not [pid for pid in started_pids(run_dir) if is_alive(pid)]


async def test_quitting_during_a_trial_stops_its_run_and_leaves_no_process(
    tmp_path: Path,
) -> None:
    run_dir = tmp_path / "run"
    async with demo_dashboard(run_dir) as (app, pilot, watched):
        await open_apply(pilot, app, KNOB)
        await pilot.press("y")
        measured = run_dir / "trials" / "01" / "before-1" / "run.json"
        await wait_until(pilot, measured.is_file, "the trial's first run", 30)
        assert is_alive(json.loads(measured.read_text())["pid"])
        asked = time.monotonic()
        await pilot.press("q")
        await app.workers.wait_for_complete()
        quit_s = time.monotonic() - asked

    assert quit_s < 15
    assert isinstance(app.return_value, Report)
    assert app.trial_outcomes == [] or app.trial_outcomes[0].cancelled
    # The cancelled trial is recorded (RUN/trials/01-cancelled.json) and listed, never kept.
    assert [(t.cancelled, t.kept) for t in watched.trials] == [(True, False)]
    (listed,) = watched.with_trials(app.return_value).trials
    assert listed.cancelled and not listed.kept
    assert (run_dir / "trials" / "01-cancelled.json").is_file()
    assert not (run_dir / "jobs").exists()
    assert not [pid for pid in started_pids(run_dir) if is_alive(pid)]
