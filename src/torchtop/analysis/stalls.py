"""Steps far slower than the typical one that come back on a schedule (a checkpoint every N
steps, an evaluation, a DataLoader restarted each epoch), from every step's wall time.

A profiler window of a few steps almost never holds one, and the mean step time hides them
among the others, so they are read from the agent's wall times of the whole run. A stall is a
step above both twice the median and the median plus `SPREAD_MULTIPLE` robust deviations. The
stalls recur with a period when the gaps between their step numbers agree: most gaps within
`PERIOD_TOLERANCE` of their median. Random slow steps (a page fault, another process on the
core) leave gaps of every length and give no period; where a few of them fall among stalls on a
schedule, the stalls are found as the costlier class (`stall_classes`).
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
SEPARATION = 1.5
"""The costliest stalls are a class of their own when the least of them added this many times
the time of the most costly slow step left out."""


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
    if int(first.sum()) < MIN_STALLS:
        return None
    typical = float(np.median(walls_s))
    stall_of = np.cumsum(first) - 1  # each slow step's stall
    added: Floats = np.bincount(stall_of[slow], weights=walls_s[slow] - typical).astype(np.float64)
    for kept in stall_classes(added):
        period = schedule(numbers[first][kept])
        if period is not None:
            inside = slow.copy()
            inside[slow] = kept[stall_of[slow]]
            count = int(kept.sum())
            return Stalls(
                period_steps=period,
                steps=tuple(int(s) for s in numbers[inside]),
                count=count,
                typical_s=typical,
                cost_s=float(added[kept].sum()) / count,
                share_lost=float(added[kept].sum()) / float(walls_s.sum()),
            )
    return None


def stall_classes(added_s: Floats) -> list[npt.NDArray[np.bool_]]:
    """Which stalls to look for a schedule among: all of them, then each set of the costliest
    that stands `SEPARATION` times above the rest. A checkpoint's stalls cost about the same
    each; a few slow steps of a busy machine among them break the gaps between them (an hour
    at 20 steps/s had 5 such steps of 0.1-0.2 s among 24 checkpoints of 1.5 s), but cost less."""
    order = np.argsort(-added_s)
    ranked = added_s[order]
    classes = [np.ones(len(added_s), dtype=np.bool_)]
    for last in range(MIN_STALLS - 1, len(ranked) - 1):
        if ranked[last] >= SEPARATION * max(float(ranked[last + 1]), 0.0):
            kept = np.zeros(len(added_s), dtype=np.bool_)
            kept[order[: last + 1]] = True
            classes.append(kept)
    return classes


def schedule(stalled: Ints) -> int | None:
    """The period of stalls that start at steps `stalled` (ascending): the median gap, where
    most gaps sit at it; None where they have none."""
    if len(stalled) < MIN_STALLS:
        return None
    gaps = np.diff(stalled)
    period = round(float(np.median(gaps)))
    if period < 2:
        return None
    tolerance = max(PERIOD_TOLERANCE * period, 1.0 if period >= LOOSE_PERIOD else 0.0)
    if float((np.abs(gaps - period) <= tolerance).mean()) < MIN_AGREEING_GAPS:
        return None
    return period
