"""What the live view keeps of each rank from tick to tick, so a tick costs what is new.

A tick of a run of 512 ranks used to redo every rank's assessment over its whole window (its
metrics, its `RankAnalysis`, its verdict through the rule tree): ~0.5 s a tick, growing with
the run. `RankCache` gives exactly what the plain functions give on the same records: it keeps
each rank's analysis and verdict until the rank has new records (its step count, notes,
settings, hello or profiler window changed; compared by count and identity, never by value).
The agent flushes steps every 50 ms, so on a busy run every rank has new records every tick;
above `refresh_per_tick` ranks due, only the stalest are redone in one tick and the others show
their figures from a few ticks ago (at 512 ranks and 32 a tick, at most 16 ticks old). Ranks
never seen are always done; `None` (the final report) redoes every rank that is due. The
straggler judgement needs no cache: it reads each rank's step blocks (`runs.step_blocks`),
kept as the records arrive, as numpy slices.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from torchtop.diagnosis.engine import diagnose
from torchtop.diagnosis.rules import RuleTree
from torchtop.model.analysis import RankAnalysis, StepCost
from torchtop.model.findings import Verdict
from torchtop.runs.state import ProcessState


def evidence_steps(analysis: RankAnalysis, window: RankAnalysis | None) -> tuple[StepCost, ...]:
    """The steps a rank's shares were measured over, each with its own split: its profiler
    window's once it has one (the recent steps then carry the window's split, scaled), else
    its recent steps (their DataLoader wait measured one by one)."""
    return window.steps if window is not None and window.steps else analysis.steps


def rank_verdict(entry: RankEntry, tree: RuleTree) -> Verdict:
    """The rank's own verdict, its confidence read over the steps its shares come from."""
    window = entry.refs[3]
    units = evidence_steps(entry.analysis, window if isinstance(window, RankAnalysis) else None)
    return diagnose(tree, entry.analysis.metrics, units)


RankAnalyser = Callable[[ProcessState, RankAnalysis | None, int | None], RankAnalysis]
"""A process, its latest window's analysis and the machine's cores -> its `RankAnalysis`."""


@dataclass(slots=True)
class RankEntry:
    """One rank's assessment and the records it was made from."""

    counts: tuple[int, int, int | None]
    """steps seen, notes, cores: compared by value."""
    refs: tuple[object, ...]
    """the process, its settings, hello and window, the rule tree: compared by identity."""
    analysis: RankAnalysis
    refreshed_tick: int
    verdict: Verdict | None = None

    def matches(self, counts: tuple[int, int, int | None], refs: tuple[object, ...]) -> bool:
        return self.counts == counts and all(a is b for a, b in zip(self.refs, refs, strict=True))


@dataclass
class RankCache:
    """Each rank's `RankAnalysis` and verdict, redone when (and only when) it has new records."""

    refresh_per_tick: int | None = None
    """The most ranks with new records redone in one tick (the stalest first); None: all."""
    computed: int = 0
    """Rank analyses made so far (tests read it)."""
    window_classes: dict[int, str] = field(default_factory=dict)
    """Each profiler window's own class, by its analysis's identity (`assess.window_calls`)."""
    _entries: dict[int, RankEntry] = field(default_factory=dict)
    _tick: int = 0

    def analyses(
        self,
        processes: Sequence[ProcessState],
        windows: Mapping[int, RankAnalysis],
        tree: RuleTree,
        cpu_count: int | None,
        analyse: RankAnalyser,
        refresh_all: bool = False,
    ) -> list[RankEntry]:
        """Each process's entry, in order: cached where its records are unchanged."""
        self._tick += 1
        entries: dict[int, RankEntry] = {}
        due: list[tuple[int, ProcessState, tuple[int, int, int | None], tuple[object, ...]]] = []
        for process in processes:
            window = windows.get(process.pid)
            counts = (process.steps_seen, len(process.notes), cpu_count)
            refs: tuple[object, ...] = (
                *(process, process.settings, process.hello, window, tree),
                process.module_times,
            )
            entry = self._entries.get(process.pid)
            if entry is not None and entry.matches(counts, refs):
                entries[process.pid] = entry
            elif entry is not None and entry.refs[0] is process:
                entries[process.pid] = entry
                due.append((entry.refreshed_tick, process, counts, refs))
            else:
                entries[process.pid] = self._entry(
                    process, window, cpu_count, analyse, counts, refs
                )
        budget = None if refresh_all else self.refresh_per_tick
        due.sort(key=lambda d: d[0])
        for _, process, counts, refs in due[:budget]:
            window = windows.get(process.pid)
            entries[process.pid] = self._entry(process, window, cpu_count, analyse, counts, refs)
        self._entries = entries
        return [entries[p.pid] for p in processes]

    def verdict(self, entry: RankEntry, tree: RuleTree) -> Verdict:
        """The rank's own verdict, diagnosed once per analysis."""
        if entry.verdict is None:
            entry.verdict = rank_verdict(entry, tree)
        return entry.verdict

    def _entry(
        self,
        process: ProcessState,
        window: RankAnalysis | None,
        cpu_count: int | None,
        analyse: RankAnalyser,
        counts: tuple[int, int, int | None],
        refs: tuple[object, ...],
    ) -> RankEntry:
        self.computed += 1
        return RankEntry(counts, refs, analyse(process, window, cpu_count), self._tick)
