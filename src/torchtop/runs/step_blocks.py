"""Every counted step of one process, summed in blocks of `BLOCK_STEPS` consecutive numbers.

The straggler judgement (`assess.stragglers`) compares the ranks over all of their steps, not
over the newest few or the profiled ones: per block of step numbers, each rank's mean busy time
(its step wall less its time in `backward()`, where DDP waits for its peers) and mean wall.
The agent numbers a process's steps from 0, one by one, so a block's index is its position
in arrays grown in chunks: a block's ten busy times (for its median) and four sums, 76 bytes per
ten steps, and a judgement reads them as numpy slices rather than an object per step; a block's
median is worked out once the next block has begun.
"""

from __future__ import annotations

import numpy as np

BLOCK_STEPS = 10
"""Steps per block; a block starts at `FIRST_STEP` + a multiple of it."""
FIRST_STEP = 2
"""The first counted step: the step figures leave out the warm-up before it
(`assess.run.WARMUP_STEPS`, which a test holds equal)."""
MAX_BLOCK = 2**26
"""A block index past this (a step numbered past 670 million) is not kept: its arrays would be
sized by the number, not by the steps seen."""


class StepBlocks:
    """Per block of step numbers: its steps' busy times, the summed busy and wall time, the
    steps seen, and the end time of its first step. Indexed by `block_of(number)`."""

    CHUNK = 256

    def __init__(self) -> None:
        self.values_s = np.full((self.CHUNK, BLOCK_STEPS), np.nan, dtype=np.float32)
        """Each block's steps' busy times, for its median: a mean is dragged by one hiccup
        of a rank whose busy time is a sliver of its step (2.7 ms read as 5 ms)."""
        self._medians_s = np.full(self.CHUNK, np.nan, dtype=np.float64)
        self._settled = 0
        """Blocks below this have a later block, so no more steps: their medians are kept."""
        self.busy_s = np.zeros(self.CHUNK, dtype=np.float64)
        self.wall_s = np.zeros(self.CHUNK, dtype=np.float64)
        self.count = np.zeros(self.CHUNK, dtype=np.int32)
        self.first_t = np.full(self.CHUNK, np.nan, dtype=np.float64)
        self.size = 0
        """One past the highest block with a step."""

    def add(self, number: int, wall_s: float, busy_s: float, t: float) -> None:
        """Count step `number` (before `FIRST_STEP`: the warm-up, left out)."""
        block = block_of(number)
        if block is None:
            return
        if block >= len(self.count):
            self._grow(block + 1)
        seen = int(self.count[block])
        if not seen:
            self.first_t[block] = t
        if seen < BLOCK_STEPS:
            self.values_s[block, seen] = busy_s
        self.busy_s[block] += busy_s
        self.wall_s[block] += wall_s
        self.count[block] += 1
        self.size = max(self.size, block + 1)

    def median_busy_s(self, size: int) -> np.ndarray:
        """The median busy time of each of the first `size` blocks (NaN where it has no step);
        worked out once for a block that a later block follows, the newest each call."""
        start = min(self._settled, size)
        if start < size:
            part = self.values_s[start:size]
            seen = ~np.isnan(part).all(axis=1)
            medians = np.full(size - start, np.nan, dtype=np.float64)
            medians[seen] = np.nanmedian(part[seen], axis=1)
            self._medians_s[start:size] = medians
            self._settled = max(self._settled, min(size, self.size) - 1)
        return self._medians_s[:size]

    def _grow(self, needed: int) -> None:
        size = max(needed, 2 * len(self.count))
        old = len(self.count)
        fills = (("busy_s", 0.0), ("wall_s", 0.0), ("count", 0), ("first_t", np.nan))
        for name, fill in (*fills, ("_medians_s", np.nan)):
            grown = np.resize(getattr(self, name), size)
            grown[old:] = fill
            setattr(self, name, grown)
        values = np.full((size, BLOCK_STEPS), np.nan, dtype=np.float32)
        values[:old] = self.values_s
        self.values_s = values


def block_of(number: int) -> int | None:
    """The block step `number` falls in; None for the warm-up and numbers past `MAX_BLOCK`."""
    if number < FIRST_STEP:
        return None
    block = (number - FIRST_STEP) // BLOCK_STEPS
    return block if block <= MAX_BLOCK else None


def first_step_of(block: int) -> int:
    """The number of the first step in `block`."""
    return FIRST_STEP + block * BLOCK_STEPS
