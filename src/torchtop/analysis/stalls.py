"""Steps far slower than the typical one that come back on a schedule (a checkpoint every N
steps, an evaluation, a DataLoader restarted each epoch), from every step's wall time.

A profiler window of a few steps almost never holds one, and the mean step time hides them
among the others, so they are read from the agent's wall times of the whole run. A stall is a
step above both twice the median and the median plus `SPREAD_MULTIPLE` robust deviations. The
stalls recur with a period when the gaps between their step numbers agree: most gaps within
`PERIOD_TOLERANCE` of their median. Random slow steps (a page fault, another process on the
core) leave gaps of every length and give no period.
"""

from __future__ import annotations

import msgspec
import numpy as np
import numpy.typing as npt

from torchtop.analysis.growth import robust_sigma

Floats = npt.NDArray[np.float64]
Ints = npt.NDArray[np.int64]

SLOW_FACTOR = 2.0
SPREAD_MULTIPLE = 6.0
MIN_STALLS = 3
MIN_AGREEING_GAPS = 0.75
"""The share of gaps between stalls that must sit at the period."""
PERIOD_TOLERANCE = 0.05
"""A gap sits at the period within this fraction of it, or one step from a period of
`LOOSE_PERIOD` steps on: a gap of 2 beside 3 is no schedule, 40 beside 41 is."""
LOOSE_PERIOD = 10


class Stalls(msgspec.Struct, frozen=True):
    """Stalls that recur every `period_steps` steps."""

    period_steps: int
    steps: tuple[int, ...]
    """The stalled steps' numbers (a stall that spills into the next step: both)."""
    count: int
    """The stalls."""
    typical_s: float
    """The median step's wall time."""
    cost_s: float
    """The mean time a stall adds to its step (its wall less the typical one)."""
    share_lost: float
    """The stalls' added time over the run's whole step time (0-1)."""


def slow_steps(walls_s: Floats) -> npt.NDArray[np.bool_]:
    """Which steps are far above the typical one."""
    typical = float(np.median(walls_s))
    spread = robust_sigma(walls_s)
    return walls_s > max(SLOW_FACTOR * typical, typical + SPREAD_MULTIPLE * spread)


def periodic_stalls(numbers: Ints, walls_s: Floats) -> Stalls | None:
    """The periodic stalls among the steps `numbers` (ascending) of walls `walls_s`, or None
    where the slow steps are too few or have no period."""
    if len(walls_s) < 2 * MIN_STALLS:
        return None
    slow = slow_steps(walls_s)
    # A stall that spills into the next step is one stall, counted from its first step.
    first = slow & ~np.concatenate(([False], slow[:-1]))
    stalled = numbers[first]
    if len(stalled) < MIN_STALLS:
        return None
    gaps = np.diff(stalled)
    period = round(float(np.median(gaps)))
    if period < 2:
        return None
    tolerance = max(PERIOD_TOLERANCE * period, 1.0 if period >= LOOSE_PERIOD else 0.0)
    if float((np.abs(gaps - period) <= tolerance).mean()) < MIN_AGREEING_GAPS:
        return None
    typical = float(np.median(walls_s))
    added = float((walls_s[slow] - typical).sum())
    return Stalls(
        period_steps=period,
        steps=tuple(int(s) for s in numbers[slow]),
        count=len(stalled),
        typical_s=typical,
        cost_s=added / len(stalled),
        share_lost=added / float(walls_s.sum()),
    )
