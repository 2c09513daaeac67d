"""What the live view keeps of each rank from tick to tick, so a tick costs what is new.

A tick of a run of 512 ranks used to redo every rank's assessment over its whole window (its
metrics, its `RankAnalysis`, its verdict through the rule tree) and lay out the newest 200
steps of every rank again for the straggler judgement: ~0.5 s a tick, growing with the run.
Two caches, each giving exactly what the plain functions give on the same records:

- `RankCache` keeps each rank's analysis and verdict until the rank has new records (its step
  count, notes, settings, hello or profiler window changed; compared by count and identity,
  never by value). The agent flushes steps every 50 ms, so on a busy run every rank has new
  records every tick; above `refresh_per_tick` ranks due, only the stalest are redone in one
  tick and the others show their figures from a few ticks ago (at 512 ranks and 32 a tick,
  at most 16 ticks old). Ranks never seen are always done; `None` (the final report) redoes
  every rank that is due.
- `StragglerCache` is the `assess.ranks.Judge` of a live view: per rank, the newest
  `SINCE_WINDOWS` windows of steps by number, updated with the new records only, and each
  shared step's culprit worked out once. Every straggler judgement is fresh each tick.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import islice
from typing import overload

import numpy as np

from torchtop.assess.ranks import SINCE_WINDOWS, busy_matrix, culprit, judged_stragglers
from torchtop.diagnosis.engine import diagnose
from torchtop.diagnosis.rules import RuleTree
from torchtop.diagnosis.schema import RankPolicy
from torchtop.model.analysis import RankAnalysis, StepCost
from torchtop.model.findings import Verdict
from torchtop.model.report import RankStanding
from torchtop.runs.state import ProcessState, StepRecord


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
    stragglers: StragglerCache = field(default_factory=lambda: StragglerCache())
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


@dataclass(slots=True)
class _Newest:
    """One rank's newest steps, as `assess.ranks.newest_stragglers` reads them: by number,
    the oldest record of each number among the newest `keep`."""

    process: ProcessState
    keep: int
    seen: int = 0
    records: deque[StepRecord] = field(default_factory=deque)
    first: dict[int, StepRecord] = field(default_factory=dict)
    count: dict[int, int] = field(default_factory=dict)
    rewritten: bool = False
    """A number came again (a restarted count): the culprits of that number may change."""

    def update(self) -> None:
        new = min(self.process.steps_seen - self.seen, len(self.process.steps))
        self.seen = self.process.steps_seen
        for record in reversed(list(islice(reversed(self.process.steps), new))):
            self._add(record)

    def _add(self, record: StepRecord) -> None:
        number = record.step
        self.records.append(record)
        self.count[number] = self.count.get(number, 0) + 1
        if number in self.first:
            self.rewritten = True
        else:
            self.first[number] = record
        if len(self.records) > self.keep:
            old = self.records.popleft()
            left = self.count[old.step] - 1
            if left:
                self.count[old.step] = left
                self.first[old.step] = next(r for r in self.records if r.step == old.step)
                self.rewritten = True
            else:
                del self.count[old.step], self.first[old.step]


class _Rows(Sequence[Sequence[StepRecord]]):
    """The shared steps' rows (each the judged ranks' records, in order), laid out on demand."""

    def __init__(self, shared: list[int], ranks: list[_Newest]) -> None:
        self.shared, self.ranks = shared, ranks

    @overload
    def __getitem__(self, index: int) -> Sequence[StepRecord]: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[Sequence[StepRecord]]: ...
    def __getitem__(
        self, index: int | slice
    ) -> Sequence[StepRecord] | Sequence[Sequence[StepRecord]]:
        if isinstance(index, slice):
            return [self._row(n) for n in self.shared[index]]
        return self._row(self.shared[index])

    def _row(self, number: int) -> list[StepRecord]:
        return [rank.first[number] for rank in self.ranks]

    def __len__(self) -> int:
        return len(self.shared)

    def __iter__(self) -> Iterator[Sequence[StepRecord]]:
        return (self._row(n) for n in self.shared)


@dataclass
class StragglerCache:
    """`assess.ranks.newest_stragglers`, kept up to date with each tick's new steps only."""

    _ranks: dict[int, _Newest] = field(default_factory=dict)
    _culprits: dict[int, tuple[int, np.ndarray]] = field(default_factory=dict)
    """Each shared step's culprit and its ranks' busy times."""
    _judged: tuple[int, ...] = ()

    def __call__(
        self, processes: Sequence[ProcessState], judged: Sequence[int], policy: RankPolicy
    ) -> dict[int, RankStanding]:
        newest = SINCE_WINDOWS * policy.window_steps
        ranks = [self._newest(processes[i], newest) for i in judged]
        self._ranks = {id(r.process): r for r in ranks}
        if not ranks:
            return {}
        shared_set = set(ranks[0].first)
        for rank in ranks[1:]:
            shared_set.intersection_update(rank.first)
        if len(ranks) < 2 or len(shared_set) < policy.min_steps:
            return {}
        shared = sorted(shared_set)
        rows = _Rows(shared, ranks)
        who = tuple(id(r.process) for r in ranks)
        if who != self._judged or any(r.rewritten for r in ranks):
            self._culprits, self._judged = {}, who
            for rank in ranks:
                rank.rewritten = False
        known = self._culprits
        self._culprits = {n: known.get(n) or self._judge_row(rows._row(n)) for n in shared}
        culprits = [self._culprits[n][0] for n in shared]
        return judged_stragglers(list(judged), rows, culprits, policy, self._busy)

    @staticmethod
    def _judge_row(row: list[StepRecord]) -> tuple[int, np.ndarray]:
        return culprit(row), busy_matrix([row])[0]

    def _busy(self, rows: Sequence[Sequence[StepRecord]]) -> np.ndarray:
        # The rows asked for are the newest shared steps, whose busy times are kept.
        numbers = [row[0].step for row in rows]
        return np.stack([self._culprits[n][1] for n in numbers])

    def _newest(self, process: ProcessState, newest: int) -> _Newest:
        # What the process itself keeps bounds what the plain judgement can read of it.
        keep = min(newest, process.steps.maxlen or newest)
        rank = self._ranks.get(id(process))
        if rank is None or rank.process is not process or rank.keep != keep:
            rank = _Newest(process, keep)
        rank.update()
        return rank
