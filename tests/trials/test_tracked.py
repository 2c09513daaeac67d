"""The tracker behind "since relaunch": it reads the followed job's step records through the
live monitor (a real run folder, written as the agent writes it), leaves out the warm-up and
the profiler window's steps, keeps every step once, and records a revert in the run folder."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from tests.conftest import RULES_DIR
from tests.report.test_trials import trial
from tests.tables import tables
from torchtop.diagnosis.rules import load_rules
from torchtop.live.watch import LiveMonitor
from torchtop.model.trial_entry import entry_json
from torchtop.runs.journal import JournalReader, JournalWriter
from torchtop.runs.layout import RunLayout
from torchtop.runs.records import Hello, Step, Window
from torchtop.trials.holding import HoldingTest
from torchtop.trials.tracked import SETTLE_STEPS, FixTracker, StepLog
from torchtop.trials.trial import trial_entry

SPANS = HoldingTest(warmup_steps=2, recent_steps=5, recent_s=0.4)


def write_steps(run_dir: Path, walls_s: list[float], first: int = 0) -> None:
    with JournalWriter(RunLayout(run_dir).agent_events(4242)) as agent:
        if first == 0:
            agent.write(Hello(t=1.0, pid=4242, argv=["train.py"]))
        for step, wall in enumerate(walls_s, first):
            agent.write(Step(t=2.0 + step, step=step, wall_s=wall))


def test_the_relaunched_jobs_steps_are_judged_without_warm_up_or_profiled_steps(
    tmp_path: Path,
) -> None:
    kept = trial(True, 0.2, 0.1)  # the trial said 2x: 5 -> 10 steps/s, with a warm-up of 3
    folder = tmp_path / "jobs" / "01"
    monitor = LiveMonitor(folder, load_rules(RULES_DIR))
    tracker = FixTracker(tmp_path, SPANS)
    tracker.started(kept.plan_after, folder, [kept])
    assert tracker.check(monitor.read) is not None  # nothing recorded yet: not judged
    assert tracker.current is not None and tracker.current.trial is kept

    # Warm-up (3 steps: the trial's, longer than the test's 2) and a window over steps 10-12
    # (and 13, which wrote the trace) are slow; the rest run as the trial said.
    walls = [0.5] * 3 + [0.1] * 7 + [0.9] * 4 + [0.1] * 26
    write_steps(folder, walls[:20])
    monitor.tick()
    tracker.check(monitor.read)
    write_steps(folder, walls[20:], first=20)
    with JournalWriter(RunLayout(folder).agent_events(4242)) as agent:
        agent.write(Window(t=30.0, first_step=10, last_step=12, path="x"))
    monitor.tick()
    holding = tracker.check(monitor.read)

    assert holding is not None and holding.steps == 40 - 3 - 4
    assert holding.steps_per_s is not None and abs(holding.steps_per_s - 10.0) < 1e-6
    assert holding.speedup is not None and abs(holding.speedup - 2.0) < 1e-6
    assert holding.holds is True
    entry = tracker.entry(kept, trial_entry(kept, with_steps=False))
    assert entry.since_relaunch is not None
    assert entry.since_relaunch.steps == 33 and entry.since_relaunch.holds is True
    assert entry.reverted is None and "reverted" not in entry_json(entry)


def test_a_revert_is_appended_to_the_run_folder_and_shown_on_the_trials_entry(
    tmp_path: Path,
) -> None:
    kept = trial(True, 0.2, 0.1)
    folder = tmp_path / "jobs" / "01"
    monitor = LiveMonitor(folder, load_rules(RULES_DIR))
    tracker = FixTracker(tmp_path, SPANS)
    tracker.started(kept.plan_after, folder, [kept])
    write_steps(folder, [0.1] * 5 + [0.3] * 30)  # a third of the trial's rate
    monitor.tick()
    holding = tracker.check(monitor.read)
    assert holding is not None and holding.holds is False
    assert tracker.current is not None

    again = tmp_path / "jobs" / "02"
    tracker.revert(tracker.current, holding, again)
    tracker.started(kept.plan_before, again, [kept])

    assert tracker.current is None  # the job runs without a kept fix: nothing to follow
    (record,) = tables(JournalReader(RunLayout(tmp_path).reverts).read_new(final=True))
    assert record["kind"] == "revert" and record["trial"] == kept.number
    assert record["from_run_dir"] == str(folder) and record["run_dir"] == str(again)
    assert record["command"] == ["python", "train.py"]
    assert record["since_relaunch"]["holds"] is False
    entry = tracker.entry(kept, trial_entry(kept, with_steps=False))
    assert entry.reverted is not None and entry.reverted.run_dir == str(again)
    assert entry.since_relaunch is not None and entry.since_relaunch.holds is False


def test_a_job_started_with_an_earlier_kept_fix_is_followed_for_that_fix(tmp_path: Path) -> None:
    """Trial 1 kept its fix; trial 2 (tried on top) was reverted, so the job starts again with
    trial 1's plan: trial 1 is the one its steps are held against."""
    first = trial(True, 0.2, 0.1)
    second = replace(trial(False, 0.1, 0.1), number=2, plan_before=first.plan_after)
    tracker = FixTracker(tmp_path, SPANS)
    tracker.started(first.plan_after, tmp_path / "jobs" / "02", [first, second])
    assert tracker.current is not None and tracker.current.trial is first
    tracker.started(first.plan_before, tmp_path / "jobs" / "03", [first, second])
    assert tracker.current is None


def test_the_step_log_leaves_out_the_warm_up_and_the_steps_a_window_slowed() -> None:
    log = StepLog(warmup_steps=3)
    log.add([(n, 1.0 + n) for n in range(12)], windows=[])
    # The window's record comes after its steps (10-13; step 14 wrote the trace).
    log.add([(n, 1.0 + n) for n in range(12, 20)], windows=[(10, 13)])
    walls, (steps, seconds) = log.walls()
    assert walls == [1.0 + n for n in (3, 4, 5, 6, 7, 8, 9, 15, 16, 17, 18, 19)]
    assert steps == 12 and seconds == sum(walls)


def test_the_step_log_keeps_each_step_once_across_overlapping_reads() -> None:
    log = StepLog(warmup_steps=0)
    log.add([(0, 0.1), (1, 0.2)], [])
    log.add([(1, 0.2), (2, 0.3), (3, 0.4)], [])  # the live state still holds step 1
    log.add([(2, 0.3)], [])
    assert log.walls() == ([0.1, 0.2, 0.3, 0.4], (4, 1.0))


def test_the_step_log_counts_the_whole_relaunch_but_keeps_only_the_newest_steps() -> None:
    log = StepLog(warmup_steps=0, bound=100)
    total = 1300  # several times SETTLE_STEPS, in 26 ticks of 50
    for start in range(0, total, 50):  # a tick's worth of new records at a time
        log.add([(n, 0.01) for n in range(start, start + 50)], windows=[(700, 703)])
    walls, (steps, seconds) = log.walls()
    assert steps == total - 5 and abs(seconds - 0.01 * steps) < 1e-9
    assert len(walls) == 100 + SETTLE_STEPS and len(log.recent) == 100
    assert log.slowed == set()  # the window's steps were settled: nothing left to remember
