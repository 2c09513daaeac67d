"""The live loop behind `run`, `demo` and `attach`: tail the run folder, assess, repeat.

Every `interval_s` it folds the new records into the run state, analyses any new profiler
window (once each), assesses the run through the rule tree and passes the report, and the
verdict to show after hysteresis, to `on_update` (the headless printer or the dashboard). It
ends when the job exits, when `for_s` has passed (stopping the job it launched), or on Ctrl-C;
then it reads the folder one last time and returns the final report.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from torchtop.analysis.summary import analyze_trace
from torchtop.diagnosis.rules import RuleTree
from torchtop.errors import InputError
from torchtop.live.assess import assess
from torchtop.live.launch import Job
from torchtop.live.tracker import VerdictTracker
from torchtop.model.analysis import RankAnalysis
from torchtop.model.findings import Verdict
from torchtop.model.report import Report
from torchtop.runs.state import RunState, RunWatcher
from torchtop.traces import read_trace

UpdateSink = Callable[[Report, Verdict, float], None]
Assessor = Callable[[RunState, Mapping[int, RankAnalysis], RuleTree, str], Report]


@dataclass
class WindowCache:
    """The analysis of each process's newest profiler window, each file analysed once."""

    analysed: dict[Path, RankAnalysis | None] = field(default_factory=dict)

    def latest(self, state: RunState) -> dict[int, RankAnalysis]:
        result: dict[int, RankAnalysis] = {}
        for process in state.processes.values():
            for record in reversed(process.windows):
                analysis = self._analysis(state.layout.root / str(record.get("path", "")))
                if analysis is not None:
                    result[process.pid] = analysis
                    break
        return result

    def _analysis(self, path: Path) -> RankAnalysis | None:
        if path not in self.analysed:
            try:
                self.analysed[path] = analyze_trace(read_trace(path)) if path.is_file() else None
            except InputError:
                self.analysed[path] = None
        return self.analysed[path]


@dataclass(frozen=True)
class Snapshot:
    """The run as of one tick: the full report, the verdict to show, the raw state."""

    report: Report
    shown: Verdict
    state: RunState
    elapsed_s: float
    finished: bool


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
        assessor: Assessor = assess,
    ) -> None:
        self.run_dir = run_dir
        self.tree = tree
        self.job = job
        self.for_s = for_s
        self.kind = kind
        self.alive = alive
        self.assessor = assessor
        self.watcher = RunWatcher(run_dir)
        self.windows = WindowCache()
        self.tracker = VerdictTracker()
        self.started = time.monotonic()

    def tick(self) -> Snapshot:
        elapsed = time.monotonic() - self.started
        state = self.watcher.poll()
        report = self.assessor(state, self.windows.latest(state), self.tree, self.kind)
        finished = (
            (self.job is not None and self.job.poll() is not None)
            or (self.alive is not None and not self.alive())
            or (self.for_s is not None and elapsed >= self.for_s)
        )
        return Snapshot(report, self.tracker.update(report.verdict), state, elapsed, finished)

    def finish(self) -> Report:
        """Stop the job if it still runs, record how it ended, and assess everything seen."""
        if self.job is not None:
            if self.job.poll() is None:
                self.job.stop()
            self.job.record_exit()
        state = self.watcher.poll(final=True)
        return self.assessor(state, self.windows.latest(state), self.tree, self.kind)


def watch(
    monitor: LiveMonitor, on_update: UpdateSink | None = None, interval_s: float = 1.0
) -> Report:
    """Tick every `interval_s` until the job ends, time is up or Ctrl-C; then the final report."""
    try:
        while True:
            snapshot = monitor.tick()
            if on_update is not None:
                on_update(snapshot.report, snapshot.shown, snapshot.elapsed_s)
            if snapshot.finished:
                break
            time.sleep(
                max(0.0, interval_s - (time.monotonic() - monitor.started - snapshot.elapsed_s))
            )
    except KeyboardInterrupt:
        pass
    return monitor.finish()
