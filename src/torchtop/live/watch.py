"""The live loop behind `run`, `demo` and `attach`: tail the run folder, assess, repeat.

Every `interval_s` it folds the new records into the run state, analyses any new profiler
window (once each), assesses the run through the rule tree and passes the report, and the
verdict to show after hysteresis, to `on_update` (the headless printer or the dashboard). It
ends when the job exits, when `for_s` has passed (stopping the job it launched), or on Ctrl-C;
then it reads the folder one last time and returns the final report.
"""

from __future__ import annotations

import time
from collections.abc import Callable
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


def watch(
    run_dir: Path,
    tree: RuleTree,
    job: Job | None = None,
    for_s: float | None = None,
    kind: str = "run",
    on_update: UpdateSink | None = None,
    interval_s: float = 1.0,
    alive: Callable[[], bool] | None = None,
) -> Report:
    watcher = RunWatcher(run_dir)
    windows = WindowCache()
    tracker = VerdictTracker()
    started = time.monotonic()
    try:
        while True:
            elapsed = time.monotonic() - started
            state = watcher.poll()
            report = assess(state, windows.latest(state), tree, kind)
            if on_update is not None:
                on_update(report, tracker.update(report.verdict), elapsed)
            if job is not None and job.poll() is not None:
                break
            if alive is not None and not alive():
                break
            if for_s is not None and elapsed >= for_s:
                break
            time.sleep(max(0.0, interval_s - (time.monotonic() - started - elapsed)))
    except KeyboardInterrupt:
        pass
    finally:
        if job is not None:
            if job.poll() is None:
                job.stop()
            job.record_exit()
    state = watcher.poll(final=True)
    return assess(state, windows.latest(state), tree, kind)
