"""After a kept fix, in the live dashboard, end to end: a real starved job, its real trial, the
relaunched job followed and held against what the trial said, and `r` taking the fix back once
the job stops running as the trial said, and its gain has gone (it runs no faster than before
the fix). Keys go through Pilot; nothing is replaced.

The job (`workloads/slowing.py`) slows down when the test touches a file, as if another job had
landed on the machine: below its rate before the fix. Trials are at most three short rounds
and spans short (1 s), so the test takes a minute or two on 2 cores.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

from tests.conftest import WORKLOADS
from tests.tables import tables
from tests.tui.conftest import wait_until
from tests.tui.test_apply_live import (
    KNOB,
    QUICK,
    demo_dashboard,
    open_apply,
    records,
    started_pids,
)
from torchtop.jobs.processes import is_alive
from torchtop.report import render_text, report_to_json
from torchtop.runs.journal import JournalReader, read_record
from torchtop.runs.records import ExitRecord, RunRecord
from torchtop.trials.holding import HoldingTest
from torchtop.tui.app import Dashboard
from torchtop.tui.revert import RevertScreen
from torchtop.tui.widgets.trial import TrialPanel

pytestmark = pytest.mark.slow

# 10 ms a sample: the workers fix pays about 4x whatever the machine's load, so three rounds
# decide it; slowed (100 ms more a step), the job runs below its rate before the fix.
JOB = [
    sys.executable,
    str(WORKLOADS / "slowing.py"),
    "--sample-sleep-ms",
    "10",
]
SPANS = HoldingTest(warmup_steps=QUICK.warmup_steps, recent_steps=10, recent_s=1.0)
OWN_STEP = re.compile(r"^step (\d+) ([0-9.]+)$", re.M)


def panel(app: Dashboard) -> str:
    return str(app.query_one(TrialPanel).render())


def own_rate(run_dir: Path, count: int, warmup_steps: int) -> float:
    """The job's own steps/s over its first `count` steady steps, by its own clock: after the
    warm-up, and without the steps a profiler window slowed (and the one after each)."""
    slowed = {
        step
        for window in records(run_dir, "window")
        for step in range(window["first_step"], window["last_step"] + 2)
    }
    own = [(int(n), float(s)) for n, s in OWN_STEP.findall((run_dir / "job.log").read_text())]
    steady = [s for n, s in own if n >= warmup_steps and n not in slowed][:count]
    assert len(steady) == count, f"the job printed {len(steady)} of {count} steady steps"
    return count / sum(steady)


async def test_a_kept_fix_whose_gain_has_gone_is_offered_for_revert_and_reverted_by_r(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    slow = tmp_path / "slow-now"
    monkeypatch.setenv("SLOW_WHEN", str(slow))
    run_dir = tmp_path / "run"
    async with demo_dashboard(run_dir, JOB, "run", SPANS) as (app, pilot, watched):
        await open_apply(pilot, app, KNOB)
        await pilot.press("y")
        await wait_until(pilot, lambda: app.trial_outcomes, "trial outcome", 300)
        (outcome,) = app.trial_outcomes
        trial = outcome.trial
        assert trial is not None and trial.kept, trial and trial.reason
        relaunched = run_dir / "jobs" / "01"
        assert watched.revertible is trial

        # The relaunched job is followed: the trial's claim beside what the job has done since.
        def judged() -> bool:
            view = app.query_one(TrialPanel).view
            return view is not None and view.holding is not None and view.holding.holds is True

        await wait_until(pilot, judged, "a judged since-relaunch figure", 60)
        view = app.query_one(TrialPanel).view
        assert view is not None and view.holding is not None
        holding = view.holding
        said = f"trial said {trial.speedup:.2f}x ({trial.trial_steps_per_s:.1f} steps/s)"
        assert said in panel(app) and ", since relaunch " in panel(app)
        assert re.search(r"since relaunch [0-9.]+x \([0-9.]+ steps/s over \d+ steps\)", panel(app))
        # Its rate is the job's own, as the job itself timed the same steps.
        assert watched.tracker.current is not None
        warmup_steps = watched.tracker.current.log.warmup_steps  # the trial's, at least
        expected = own_rate(relaunched, holding.steps, warmup_steps)
        assert holding.steps_per_s == pytest.approx(expected, rel=0.05)
        assert app.screen.active_bindings["r"].enabled

        # The job slows down: the panel warns, and offers `r`.
        slow.touch()

        # (It falls short of the trial first, while the newest spans still hold fast steps.)
        def gone() -> bool:
            view = app.query_one(TrialPanel).view
            return view is not None and view.falls_short and view.gain_gone

        await wait_until(pilot, gone, "the gain-gone warning", 30)
        text = panel(app)
        assert "⚠ no longer holds: no faster than before the fix · r: revert · " in text
        assert "· no longer holds" in str(app.query_one(TrialPanel).border_title)
        assert app.query_one(TrialPanel).border_subtitle == "r: revert"

        # `r`, then Escape, changes nothing; `r`, then `y`, starts the job without the fix.
        await pilot.press("r")
        await wait_until(pilot, lambda: isinstance(app.screen, RevertScreen), "revert modal", 5)
        shown = str(app.screen.query_one("#revert-text").render())
        assert "take back: " in shown and "new command: " in shown
        await pilot.press("escape")
        assert watched.job.layout.root == relaunched and watched.job.poll() is None
        await pilot.press("r")
        await wait_until(pilot, lambda: isinstance(app.screen, RevertScreen), "revert modal", 5)
        await pilot.press("y")

        def reverted() -> bool:
            view = app.query_one(TrialPanel).view
            return view is not None and view.revert is not None

        await wait_until(pilot, reverted, "the revert", 30)
        assert "reverted by you: the job runs without the fix again" in panel(app)
        again = run_dir / "jobs" / "02"
        await wait_until(pilot, lambda: records(again, "hello"), "the reverted job's agent", 60)
        # Nothing kept runs now: `r` is no longer offered.
        assert watched.revertible is None and "r" not in app.screen.active_bindings
        await pilot.press("q")
        await app.workers.wait_for_complete()

    # The reverted job runs as the user gave it; the one with the fix was stopped.
    run = read_record(again / "run.json", RunRecord)
    assert run is not None and run.command == JOB
    (hello,) = records(again, "hello")
    assert "--num-workers" not in hello["argv"]
    ending = read_record(relaunched / "exit.json", ExitRecord)
    assert ending is not None and ending.how == "stopped"
    # The revert is in the run folder, with the figures it was made on...
    (record,) = tables(JournalReader(run_dir / "reverts.jsonl").read_new(final=True))
    assert record["trial"] == trial.number and record["run_dir"] == str(again)
    assert record["from_run_dir"] == str(relaunched)
    assert record["since_relaunch"]["holds"] is False, json.dumps(record["since_relaunch"])
    assert record["since_relaunch"]["gain_gone"] is True
    # ...and in the final report, beside the trial's claim.
    report = report_to_json(watched.with_trials(app.return_value))
    (entry,) = report["trials"]
    assert entry["kept"] is True and entry["reverted"]["run_dir"] == str(again)
    assert entry["since_relaunch"]["holds"] is False
    assert entry["since_relaunch"]["steps"] >= 2 * SPANS.recent_steps
    assert entry["since_relaunch"]["gain_gone"] is True
    session = watched.with_trials(app.return_value)
    text = render_text(session)
    assert "no longer holds: no faster than before the fix: the last " in text
    # Quit right after the revert: the session's verdict, not "UNKNOWN" for the new job's steps.
    assert session.verdict.bottleneck != "unknown", text
    assert not [pid for pid in started_pids(run_dir) if is_alive(pid)]
