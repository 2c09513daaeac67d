"""After a kept fix: the relaunched job's steps against the trial, and the fix taken back.

`WatchedJob` hands each job it starts to a `FixTracker`. When that job runs with a fix a trial
kept, the tracker reads the job's step records from the folder the monitor follows (each tick,
from the dashboard's tick thread), keeps every step since the relaunch (`StepLog`: the live
state keeps only the newest) and judges them with `relaunch.holding`. The newest judgement per
trial goes into the report's `trials` entry as `since_relaunch`; a revert (the user's `r`) is
appended to `RUN/reverts.jsonl` and shown on the entry as `reverted`. A relaunch with no kept
fix, or one torchtop did not start, is not tracked.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from torchtop.advice.plan import LaunchPlan
from torchtop.live.watch import LiveMonitor
from torchtop.relaunch.holding import (
    Holding,
    HoldingTest,
    StepLog,
    TrialClaim,
    check_holding,
    steady_walls,
)
from torchtop.relaunch.measure import main_process
from torchtop.relaunch.trial import Trial
from torchtop.runs.journal import JournalWriter
from torchtop.runs.state import RunState

REVERTS_FILE = "reverts.jsonl"

Followed = tuple[list[tuple[int, float]], list[tuple[int, int]]]


@dataclass
class Relaunch:
    """A job started with the fix `trial` kept, recorded in `run_dir`."""

    trial: Trial
    run_dir: Path
    log: StepLog = field(default_factory=StepLog)


class FixTracker:
    """The job that runs with a kept fix now (if any), and what was seen of each such job."""

    def __init__(self, run_root: Path, test: HoldingTest) -> None:
        self.run_root = run_root
        self.test = test
        self.current: Relaunch | None = None
        self.seen: dict[int, dict[str, Any]] = {}
        """trial number -> its `since_relaunch` entry, the newest judgement."""
        self.reverted: dict[int, dict[str, Any]] = {}
        self._lock = threading.Lock()

    def started(self, plan: LaunchPlan, run_dir: Path, trials: list[Trial]) -> None:
        """A job was started with `plan`: tracked when it runs with a kept trial's fix (the
        newest such trial: an earlier fix survives a later trial that was reverted)."""
        kept = [t for t in trials if t.kept and t.plan_after == plan]
        with self._lock:
            self.current = Relaunch(kept[-1], run_dir) if kept else None

    def check(self, monitor: LiveMonitor) -> Holding | None:
        """The tracked job's steps so far, judged; None when no job with a kept fix runs."""
        with self._lock:
            relaunch = self.current
            if relaunch is None:
                return None
            steps, windows = monitor.read(lambda state: _followed(state, relaunch.run_dir))
            relaunch.log.add(steps)
            test = self._test_for(relaunch.trial)
            walls = steady_walls(relaunch.log.pairs(), windows, test.warmup_steps)
            holding = check_holding(walls, claim_of(relaunch.trial), test)
            self.seen[relaunch.trial.number] = holding.as_json(_now_iso())
            return holding

    def revert(self, relaunch: Relaunch, holding: Holding | None, run_dir: Path) -> None:
        """Record that the user took `relaunch`'s fix back; the job now runs in `run_dir`."""
        record = {
            "kind": "revert",
            "t": time.time(),
            "at": _now_iso(),
            "trial": relaunch.trial.number,
            "fixes": [f.as_json() for f in relaunch.trial.fixes],
            "from_run_dir": str(relaunch.run_dir),
            "run_dir": str(run_dir),
            "command": list(relaunch.trial.plan_before.command),
            "since_relaunch": holding.as_json(_now_iso()) if holding is not None else None,
        }
        with JournalWriter(self.run_root / REVERTS_FILE) as writer:
            writer.write(record)
        self.reverted[relaunch.trial.number] = {
            k: record[k] for k in ("at", "run_dir", "from_run_dir")
        }

    def entry(self, trial: Trial, entry: dict[str, Any]) -> dict[str, Any]:
        """`entry` (the trial's report entry) with what was seen after its relaunch."""
        added: dict[str, Any] = {}
        if trial.number in self.seen:
            added["since_relaunch"] = self.seen[trial.number]
        if trial.number in self.reverted:
            added["reverted"] = self.reverted[trial.number]
        return {**entry, **added}

    def _test_for(self, trial: Trial) -> HoldingTest:
        # The relaunched job warms up at least as long as the trial's runs did.
        warmups = [m.warmup_steps for m in trial.after]
        return replace(self.test, warmup_steps=max([self.test.warmup_steps, *warmups]))


def claim_of(trial: Trial) -> TrialClaim:
    """What `trial` measured: its "before" rate and each "after" run's step times."""
    return TrialClaim(trial.baseline_steps_per_s, tuple(m.step_wall_s for m in trial.after))


def _followed(state: RunState, run_dir: Path) -> Followed:
    """The main process's (step, wall_s) and profiler windows, if `state` is `run_dir`'s."""
    if state.layout.root != run_dir:
        return [], []
    process = main_process(state)
    if process is None:
        return [], []
    steps = [(s.step, s.wall_s) for s in process.steps]
    windows = [
        (int(w["first_step"]), int(w["last_step"]))
        for w in process.windows
        if isinstance(w.get("first_step"), int) and isinstance(w.get("last_step"), int)
    ]
    return steps, windows


def _now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")
