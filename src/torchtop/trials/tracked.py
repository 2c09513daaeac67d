"""After a kept fix: the relaunched job's steps against the trial, and the fix taken back.

`WatchedJob` hands each job it starts to a `FixTracker`. When that job runs with a fix a trial
kept, the tracker reads the job's step records from the folder the monitor follows, through the
monitor's `read` (each tick, from the dashboard's tick thread; the tracker knows no monitor),
folds them into a `StepLog` (totals over the whole relaunch, which the live state's newest steps
would not give, and the newest steps for judging) and judges them with `trials.holding`. The
newest judgement per trial goes into the report's `trials` entry as `since_relaunch`; a revert
(the user's `r`) is appended to `RUN/reverts.jsonl` and shown on the entry as `reverted`. A
relaunch with no kept fix, or one torchtop did not start, is not tracked.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Protocol, TypeVar

import msgspec

from torchtop.model.plan import LaunchPlan
from torchtop.model.trial_entry import Reverted, SinceRelaunch, TrialEntry
from torchtop.model.trials import Holding, Trial
from torchtop.runs.journal import JournalWriter
from torchtop.runs.layout import RunLayout
from torchtop.runs.records import Revert
from torchtop.runs.state import RunState
from torchtop.trials.holding import HoldingTest, TrialClaim, check_holding
from torchtop.trials.measure import main_process

T = TypeVar("T")


class StateReader(Protocol):
    """A reader applied to a run state while no tick changes it (`LiveMonitor.read`)."""

    def __call__(self, reader: Callable[[RunState], T], /) -> T: ...


SETTLE_STEPS = 256
"""A step is settled (counted or left out for good) once this many newer steps were seen: a
profiler window's record comes when it ends, a few steps after its first (4 by default)."""
RECENT_BOUND = 16384
"""Settled steady steps kept for judging: two 10 s spans of a job up to ~800 steps/s."""

Followed = tuple[list[tuple[int, float]], list[tuple[int, int]]]


class StepLog:
    """The steady-state steps of one process since the relaunch, each once: totals for the
    whole relaunch and the newest steps (bounded), so that a job of hours costs no more per
    tick than one of minutes. Steady: after `warmup_steps`, and neither a step a profiler
    window slowed nor the one after it, which pays for writing the trace (the trial's runs
    had no window)."""

    def __init__(self, warmup_steps: int, bound: int = RECENT_BOUND) -> None:
        self.warmup_steps = warmup_steps
        self.count, self.total_s = 0, 0.0
        self.recent: deque[float] = deque(maxlen=bound)
        self.pending: deque[tuple[int, float]] = deque()
        self.slowed: set[int] = set()
        self.last = -1

    def add(self, steps: Iterable[tuple[int, float]], windows: Iterable[tuple[int, int]]) -> None:
        """New (step, wall_s) records (those seen before are skipped) and the windows so far."""
        for first, last in windows:
            self.slowed.update(range(max(first, self.settled_up_to), last + 2))
        for step, wall in steps:
            if step > self.last:
                self.pending.append((step, wall))
                self.last = step
        while self.pending and self.last - self.pending[0][0] >= SETTLE_STEPS:
            step, wall = self.pending.popleft()
            if self._steady(step):
                self.count, self.total_s = self.count + 1, self.total_s + wall
                self.recent.append(wall)
            self.slowed.discard(step)

    @property
    def settled_up_to(self) -> int:
        return self.pending[0][0] if self.pending else self.last + 1

    def walls(self) -> tuple[list[float], tuple[int, float]]:
        """The newest steady step times, oldest first, and (steps, seconds) of all of them."""
        tail = [wall for step, wall in self.pending if self._steady(step)]
        return [*self.recent, *tail], (self.count + len(tail), self.total_s + sum(tail))

    def _steady(self, step: int) -> bool:
        return step >= self.warmup_steps and step not in self.slowed


@dataclass
class Relaunch:
    """A job started with the fix `trial` kept, recorded in `run_dir`."""

    trial: Trial
    run_dir: Path
    log: StepLog
    short: bool = False
    """The last judgement found the job short of its trial (the warning is up)."""


class FixTracker:
    """The job that runs with a kept fix now (if any), and what was seen of each such job."""

    def __init__(self, run_root: Path, test: HoldingTest) -> None:
        self.run_root = run_root
        self.test = test
        self.current: Relaunch | None = None
        self.seen: dict[int, SinceRelaunch] = {}
        """trial number -> its `since_relaunch` entry, the newest judgement."""
        self.reverted: dict[int, Reverted] = {}
        self._lock = threading.Lock()

    def started(self, plan: LaunchPlan, run_dir: Path, trials: list[Trial]) -> None:
        """A job was started with `plan`: tracked when it runs with a kept trial's fix (the
        newest such trial: an earlier fix survives a later trial that was reverted)."""
        kept = [t for t in trials if t.kept and t.plan_after == plan]
        with self._lock:
            if not kept:
                self.current = None
                return
            log = StepLog(self._test_for(kept[-1]).warmup_steps)
            self.current = Relaunch(kept[-1], run_dir, log)

    def check(self, read: StateReader) -> Holding | None:
        """The tracked job's steps so far, read through `read`, judged; None when no job with a
        kept fix runs."""
        with self._lock:
            relaunch = self.current
            if relaunch is None:
                return None
            steps, windows = read(lambda state: _followed(state, relaunch.run_dir))
            relaunch.log.add(steps, windows)
            walls, whole = relaunch.log.walls()
            test = self._test_for(relaunch.trial)
            holding = check_holding(
                walls, claim_of(relaunch.trial), test, whole, was_short=relaunch.short
            )
            relaunch.short = holding.holds is False
            self.seen[relaunch.trial.number] = holding.entry(_now_iso())
            return holding

    def revert(self, relaunch: Relaunch, holding: Holding | None, run_dir: Path) -> None:
        """Record that the user took `relaunch`'s fix back; the job now runs in `run_dir`."""
        reverted = Reverted(at=_now_iso(), run_dir=str(run_dir), from_run_dir=str(relaunch.run_dir))
        record = Revert(
            t=time.time(),
            at=reverted.at,
            trial=relaunch.trial.number,
            fixes=[fix.entry() for fix in relaunch.trial.fixes],
            from_run_dir=reverted.from_run_dir,
            run_dir=reverted.run_dir,
            command=list(relaunch.trial.plan_before.command),
            since_relaunch=holding.entry(reverted.at) if holding is not None else None,
        )
        with JournalWriter(RunLayout(self.run_root).reverts) as writer:
            writer.write(record)
        self.reverted[relaunch.trial.number] = reverted

    def entry(self, trial: Trial, entry: TrialEntry) -> TrialEntry:
        """`entry` (the trial's report entry) with what was seen after its relaunch."""
        return msgspec.structs.replace(
            entry,
            since_relaunch=self.seen.get(trial.number),
            reverted=self.reverted.get(trial.number),
        )

    def _test_for(self, trial: Trial) -> HoldingTest:
        # The relaunched job warms up at least as long as the trial's runs did.
        warmups = [m.warmup_steps for m in trial.after]
        return replace(self.test, warmup_steps=max([self.test.warmup_steps, *warmups]))


def claim_of(trial: Trial) -> TrialClaim:
    """What `trial` measured: its "before" rate and each "after" run's step times."""
    after = tuple(m.step_wall_s for m in trial.after)
    return TrialClaim(trial.baseline_steps_per_s, after, trial.speedup)


def _followed(state: RunState, run_dir: Path) -> Followed:
    """The main process's (step, wall_s) and profiler windows, if `state` is `run_dir`'s."""
    if state.layout.root != run_dir:
        return [], []
    process = main_process(state)
    if process is None:
        return [], []
    steps = [(s.step, s.wall_s) for s in process.steps]
    windows = [
        (w.first_step, w.last_step)
        for w in process.windows
        if w.first_step is not None and w.last_step is not None
    ]
    return steps, windows


def _now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")
