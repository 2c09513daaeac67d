"""The analysis of each process's newest profiler window, each trace file analysed once.

The live loop asks for the newest windows every tick; a window file is read and analysed the
first time it is seen and remembered (or remembered as unreadable), so a run of hours costs one
analysis per window.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from torchtop.analysis.summary import analyze_trace
from torchtop.errors import InputError
from torchtop.model.analysis import RankAnalysis
from torchtop.runs.state import RunState
from torchtop.traces import read_trace


@dataclass
class WindowCache:
    """The analysis of each process's newest profiler window, each file analysed once."""

    analysed: dict[Path, RankAnalysis | None] = field(default_factory=dict)

    def latest(self, state: RunState) -> dict[int, RankAnalysis]:
        result: dict[int, RankAnalysis] = {}
        for process in state.processes.values():
            for record in reversed(process.windows):
                analysis = self._analysis((process.folder or state.layout.root) / record.path)
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
