"""What the whole run keeps, bounded, for the long run's analysis: each process's memory at its
step ends, thinned as it grows, and the main threads' sampled stacks with their times.

A run of weeks has millions of steps. `MemorySeries` keeps at most `MAX_POINTS` points: when
full it drops every other point and then keeps every other step from then on, so its points
stay evenly spread over the whole run (a slope over them is the slope over the run).
`StackMarks` keeps the newest `MAX_MARKS` main-thread stacks (one every 5 s with an agent:
about 6 hours), each stack interned, since a loop's stacks repeat: a stall found later (a
checkpoint every 40 steps) is located by the stacks whose times fall inside its steps, past
the few whole dumps `Samples` keeps.
"""

from __future__ import annotations

from collections import deque

import numpy as np

from torchtop.model.report import StackLine
from torchtop.runs.records import Step

MAX_POINTS = 4096
SERIES = ("rss_bytes", "cuda_allocated_bytes", "cuda_reserved_bytes", "cuda_peak_allocated_bytes")
MAX_MARKS = 4096
MAX_INTERNED = 10_000


class MemorySeries:
    """A process's memory at its step ends: step number, time and each of `SERIES` (NaN where
    a step did not measure it), at most `MAX_POINTS` points spread over the whole run."""

    def __init__(self) -> None:
        self.columns = np.full((2 + len(SERIES), MAX_POINTS), np.nan, dtype=np.float64)
        self.count = 0
        self.stride = 1
        self._seen = 0

    def add(self, record: Step) -> None:
        values = [getattr(record, name) for name in SERIES]
        if not any(isinstance(v, int) for v in values):
            return
        self._seen += 1
        if (self._seen - 1) % self.stride:
            return
        if self.count == MAX_POINTS:
            half = self.columns[:, ::2].copy()
            self.columns.fill(np.nan)
            self.columns[:, : half.shape[1]] = half
            self.count = half.shape[1]
            self.stride *= 2
        row = [float(record.step), record.t]
        row += [float(v) if isinstance(v, int) else np.nan for v in values]
        self.columns[:, self.count] = row
        self.count += 1

    @property
    def steps(self) -> np.ndarray:
        return self.columns[0, : self.count]

    @property
    def times(self) -> np.ndarray:
        return self.columns[1, : self.count]

    def values(self, name: str) -> np.ndarray:
        """One of `SERIES`, NaN where not measured."""
        return self.columns[2 + SERIES.index(name), : self.count]


StackMark = tuple[float, int, tuple[StackLine, ...]]
"""When a main thread was sampled, its process, and its frames (innermost first)."""


class StackMarks:
    """The newest `MAX_MARKS` main-thread stacks of the run, oldest first."""

    def __init__(self) -> None:
        self.marks: deque[StackMark] = deque(maxlen=MAX_MARKS)
        self._interned: dict[tuple[StackLine, ...], tuple[StackLine, ...]] = {}

    def add(self, t: float, pid: int, frames: tuple[StackLine, ...]) -> None:
        if len(self._interned) > MAX_INTERNED:
            self._interned.clear()
        kept = self._interned.setdefault(frames, frames)
        self.marks.append((t, pid, kept))

    def within(self, pid: int, spans: list[tuple[float, float]]) -> list[tuple[StackLine, ...]]:
        """The stacks of `pid` sampled inside any of `spans` (start and end times)."""
        own = [(t, frames) for t, p, frames in self.marks if p == pid]
        times = np.array([t for t, _ in own], dtype=np.float64)
        found: list[tuple[StackLine, ...]] = []
        for start_t, end_t in spans:
            first = np.searchsorted(times, start_t, side="left")
            last = np.searchsorted(times, end_t, side="right")
            found.extend(frames for _, frames in own[int(first) : int(last)])
        return found
