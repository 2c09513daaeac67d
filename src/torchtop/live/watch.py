"""The live loop behind `run`, `demo` and `attach`: tail the run folder, assess, repeat.

Every `interval_s` it folds the new records into the run state, analyses any new profiler
window (once each), assesses the run through the rule tree and passes the report, and the
verdict to show after hysteresis, to `on_update` (the headless printer or the dashboard). It
ends when the job exits, when `for_s` has passed (stopping the job it launched), or on Ctrl-C
or a SIGTERM to torchtop (`timeout`, `kill`: the job it launched is stopped as Ctrl-C stops it,
not left running unwatched); then it reads the folder one last time and returns the final report.

When the dashboard tries a fix, the job is stopped and measured elsewhere for a while, then
started again into a run folder of its own: `detach` lets go of the job (the monitor keeps
showing the folder as it was, and does not end because the job did), `follow` takes up the new
job and its folder, with a fresh verdict. The time in between does not count against `for_s`:
the user asked for that much watching, not for a trial cut short. The tick thread and the
thread trying the fix meet here, so every method holds the monitor's lock.

Every time the monitor reads (its start, each tick, detach and follow) comes from one `clock`,
`time.monotonic` unless given, and `watch` sleeps through one `sleep`: a replay on a simulated
clock then runs this very tick, with elapsed times and `for_s` that never depend on the machine.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from torchtop.assess.context import Context, read_context
from torchtop.assess.rank_cache import RankCache
from torchtop.assess.run import assess
from torchtop.assess.snapshot import Snapshot
from torchtop.assess.tracker import VerdictTracker
from torchtop.assess.windows import WindowCache
from torchtop.diagnosis.rules import RuleTree
from torchtop.jobs.interrupt import terminate_as_interrupt
from torchtop.model.analysis import RankAnalysis
from torchtop.model.findings import Verdict
from torchtop.model.report import Report
from torchtop.runs.nodes import SharedRunWatcher
from torchtop.runs.requests import touch_request
from torchtop.runs.state import RunState

if TYPE_CHECKING:
    from torchtop.jobs.job import Job

UpdateSink = Callable[[Report, Verdict, float], None]
Assessor = Callable[[RunState, Mapping[int, RankAnalysis], RuleTree, str], Report]
Clock = Callable[[], float]
"""Seconds on a clock that never goes back; only differences between its readings count."""
T = TypeVar("T")
RANKS_REFRESHED_PER_TICK = 32
"""Above this many ranks with new records, a tick redoes the stalest this many; the others
show figures a few ticks old (`assess.rank_cache`), and the final report redoes them all."""


TickSink = Callable[[Snapshot], None]
"""An observer of each tick's snapshot (`--metrics`, `--tensorboard`)."""


class LiveMonitor:
    """One tick at a time: fold new records, assess, apply hysteresis; then finish once."""

    def __init__(
        self,
        run_dir: Path,
        tree: RuleTree,
        job: Job | None = None,
        for_s: float | None = None,
        kind: str = "run",
        alive: Callable[[], bool] | None = None,
        assessor: Assessor | None = None,
        clock: Clock = time.monotonic,
        on_tick: TickSink | None = None,
        context: Context | None = None,
    ) -> None:
        self.run_dir = run_dir
        self.tree = tree
        self.job = job
        self.for_s = for_s
        self.kind = kind
        self.alive = alive
        self.assessor = assessor
        """None: `assess`, keeping each rank's assessment from tick to tick (`ranks`)."""
        self.clock = clock
        self.on_tick = on_tick
        """Given each tick's snapshot while the state is still locked (`--metrics`)."""
        self.context = context or read_context()
        """What `assess` is given of this machine, read once (`assess.context`)."""
        self.watcher = SharedRunWatcher(run_dir)
        self.windows = WindowCache()
        self.ranks = RankCache(RANKS_REFRESHED_PER_TICK)
        self.tracker = VerdictTracker()
        self.started = clock()
        self.lock = threading.Lock()
        self.held_s = 0.0
        """Time spent between `detach` and `follow`, which `for_s` does not count."""
        self._detached_at: float | None = None

    def tick(self) -> Snapshot:
        with self.lock:
            now = self.clock()
            elapsed = now - self.started
            state = self.watcher.poll()
            report = self._assess(state)
            finished = (
                (self.job is not None and self.job.poll() is not None)
                or (self.alive is not None and not self.alive())
                or (self.for_s is not None and elapsed - self._held_s(now) >= self.for_s)
            )
            return self._publish(report, state, elapsed, finished)

    def read(self, reader: Callable[[RunState], T]) -> T:
        """`reader` applied to the run state as it stands, while no tick is changing it."""
        with self.lock:
            return reader(self.watcher.state)

    def detach(self) -> Job | None:
        """Let go of the job (someone else stops it); until `follow`, its ending ends nothing."""
        with self.lock:
            job, self.job = self.job, None
            if self._detached_at is None:
                self._detached_at = self.clock()
            return job

    def follow(self, run_dir: Path, job: Job) -> None:
        """Watch `job`, recorded in `run_dir`, from now on: a new folder and a fresh verdict."""
        with self.lock:
            self.held_s = self._held_s(self.clock())
            self._detached_at = None
            self.run_dir, self.job = run_dir, job
            self.watcher = SharedRunWatcher(run_dir)
            self.windows = WindowCache()
            self.ranks = RankCache(RANKS_REFRESHED_PER_TICK)
            self.tracker = VerdictTracker()

    def request_modules(self) -> str:
        """Ask every agent of the job watched now to time its modules' forward for a few steps
        (`RUN/requests/modules`); what was done, in words."""
        # Not under the lock: a tick analysing a large window would hold the caller (the UI).
        touch_request(self.run_dir, lambda layout: layout.modules_request)
        return "modules: every rank times its modules' forward from its next step end"

    def finish(self) -> Report:
        """Stop the job if it still runs, record how it ended, and assess everything seen."""
        with self.lock:
            if self.job is not None:
                if self.job.poll() is None:
                    self.job.stop()
                self.job.record_exit()
            state = self.watcher.poll(final=True)
            report = self._assess(state, final=True)
            if self.on_tick is not None:
                # The observers (event files, metrics) get what the last tick had not read
                # yet: a job that ended between ticks, a mirror that caught up at the end.
                self._publish(report, state, self.clock() - self.started, True)
            return report

    def _publish(self, report: Report, state: RunState, elapsed: float, finished: bool) -> Snapshot:
        """The snapshot of `report`, its verdict held by the tracker, given to `on_tick`."""
        snapshot = Snapshot(report, self.tracker.update(report.verdict), state, elapsed, finished)
        if self.on_tick is not None:
            self.on_tick(snapshot)
        return snapshot

    def _assess(self, state: RunState, final: bool = False) -> Report:
        windows = self.windows.pooled(state)
        if self.assessor is not None:
            return self.assessor(state, windows, self.tree, self.kind)
        each = self.windows.each(state)
        return assess(
            state,
            windows,
            self.tree,
            self.kind,
            self.ranks,
            refresh_all=final,
            each_window=each,
            context=self.context,
        )

    def _held_s(self, now: float) -> float:
        detached = now - self._detached_at if self._detached_at is not None else 0.0
        return self.held_s + detached


def watch(
    monitor: LiveMonitor,
    on_update: UpdateSink | None = None,
    interval_s: float = 1.0,
    sleep: Callable[[float], None] = time.sleep,
) -> Report:
    """Tick every `interval_s` until the job ends, time is up or Ctrl-C; then the final report.

    The interval is measured on the monitor's clock; `sleep` waits out what is left of it."""
    try:
        with terminate_as_interrupt():
            while True:
                snapshot = monitor.tick()
                if on_update is not None:
                    on_update(snapshot.report, snapshot.shown, snapshot.elapsed_s)
                if snapshot.finished:
                    break
                elapsed_s = monitor.clock() - monitor.started - snapshot.elapsed_s
                sleep(max(0.0, interval_s - elapsed_s))
    except KeyboardInterrupt:
        pass
    return monitor.finish()
