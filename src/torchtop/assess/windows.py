"""Each process's profiler windows, each trace file analysed once, and all of them pooled.

The live loop asks for the windows every tick; a window file is read and analysed the first
time it is seen and remembered (or remembered as unreadable), so a run of hours costs one
analysis per window. The verdict is made from every window of a process pooled, never from the
newest alone: a 4-step window is a short look, and one that caught a burst (a checkpoint's
copies, an evaluation pass) must not flip what the others agree on. The shares are each
window's weighted by the steps it covered (`merge_rank(weigh="steps")`), not by their time: a
burst makes its steps slow, and weighing by time would let that one window outweigh the
others by its slowness alone. The confidence's evidence units are all the profiled steps, each
with its own split, so a window that disagrees widens the spread of the margin (and lowers the
confidence) instead of replacing the verdict. The pooled analysis is remade only when a new
window arrives, and is the same object between arrivals (the live rank cache compares by
identity).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from torchtop.analysis.summary import analyze_trace, merge_rank
from torchtop.errors import InputError
from torchtop.model.analysis import RankAnalysis
from torchtop.runs.state import ProcessState, RunState
from torchtop.traces import read_trace


@dataclass
class WindowCache:
    """Each process's window analyses and their pool, each file analysed once."""

    analysed: dict[Path, RankAnalysis | None] = field(default_factory=dict)
    _pooled: dict[int, tuple[tuple[RankAnalysis, ...], RankAnalysis]] = field(default_factory=dict)

    def each(self, state: RunState) -> dict[int, tuple[RankAnalysis, ...]]:
        """Every readable window of each process that has one, oldest first."""
        result: dict[int, tuple[RankAnalysis, ...]] = {}
        for process in state.processes.values():
            found = self._windows(process, state)
            if found:
                result[process.pid] = found
        return result

    def pooled(self, state: RunState) -> dict[int, RankAnalysis]:
        """Each process's windows pooled into one analysis (the verdict's input)."""
        return {pid: self.pool(pid, found) for pid, found in self.each(state).items()}

    def latest(self, state: RunState) -> dict[int, RankAnalysis]:
        """Each process's newest readable window alone."""
        return {pid: found[-1] for pid, found in self.each(state).items()}

    def pool(self, pid: int, found: tuple[RankAnalysis, ...]) -> RankAnalysis:
        known = self._pooled.get(pid)
        if known is not None and len(known[0]) == len(found):
            return known[1]
        pooled = merge_rank(found, weigh="steps")
        self._pooled[pid] = (found, pooled)
        return pooled

    def _windows(self, process: ProcessState, state: RunState) -> tuple[RankAnalysis, ...]:
        folder = process.folder or state.layout.root
        analyses = (self._analysis(folder / record.path) for record in process.windows)
        return tuple(a for a in analyses if a is not None)

    def _analysis(self, path: Path) -> RankAnalysis | None:
        if path not in self.analysed:
            try:
                self.analysed[path] = analyze_trace(read_trace(path)) if path.is_file() else None
            except InputError:
                self.analysed[path] = None
        return self.analysed[path]
