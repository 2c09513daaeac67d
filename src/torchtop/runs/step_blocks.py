"""Every counted step of one process, summed in blocks of `BLOCK_STEPS` consecutive numbers.

The straggler judgement (`assess.stragglers`) compares the ranks over all of their steps, not
over the newest few or the profiled ones: per block of step numbers, each rank's mean busy time
(its step wall less its time in `backward()`, where DDP waits for its peers) and mean wall.
The agent numbers a process's steps from 0, one by one, so a block's index is its position
in arrays grown in chunks: four numbers per block (28 bytes per ten steps), whatever the run's
length, and a judgement reads them as numpy slices rather than an object per step.
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
    """Per block of step numbers: the summed busy and wall time, the steps seen, and the end
    time of its first step. Indexed by `block_of(number)`."""

    CHUNK = 256

    def __init__(self) -> None:
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
        if not self.count[block]:
            self.first_t[block] = t
        self.busy_s[block] += busy_s
        self.wall_s[block] += wall_s
        self.count[block] += 1
        self.size = max(self.size, block + 1)

    def _grow(self, needed: int) -> None:
        size = max(needed, 2 * len(self.count))
        old = len(self.count)
        for name, fill in (("busy_s", 0.0), ("wall_s", 0.0), ("count", 0), ("first_t", np.nan)):
            grown = np.resize(getattr(self, name), size)
            grown[old:] = fill
            setattr(self, name, grown)


def block_of(number: int) -> int | None:
    """The block step `number` falls in; None for the warm-up and numbers past `MAX_BLOCK`."""
    if number < FIRST_STEP:
        return None
    block = (number - FIRST_STEP) // BLOCK_STEPS
    return block if block <= MAX_BLOCK else None


def first_step_of(block: int) -> int:
    """The number of the first step in `block`."""
    return FIRST_STEP + block * BLOCK_STEPS
