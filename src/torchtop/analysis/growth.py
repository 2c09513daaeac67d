"""Memory that grows steadily over steps, told from noise, a one-off jump and a sawtooth.

A leak costs a little every step, so it is a slope over step numbers: the Theil-Sen estimate
(the median of the pairwise slopes), which a few outliers (a checkpoint's buffer, an allocator
returning a block) do not move. A slope alone cannot tell a leak from a job that allocated once
halfway (a cache filled, a larger batch) or from one that grows and frees again (a sawtooth):
the series is cut into `SEGMENTS` consecutive pieces by step, and growth is steady only where
every piece's median stands above the one before by a fair part of what the slope predicts
over a piece, and the whole rise stands clear of the scatter around the fitted line.
"""

from __future__ import annotations

import msgspec
import numpy as np
import numpy.typing as npt

Floats = npt.NDArray[np.float64]

SEGMENTS = 5
"""Consecutive pieces of the series whose medians must each rise."""
MIN_SEGMENT_RISE = 0.3
"""Each piece's median rises at least this fraction of the slope's prediction over a piece: a
one-off jump rises in one piece only, a sawtooth's pieces do not rise in turn."""
NOISE_MULTIPLE = 4.0
"""The whole rise must exceed this many robust standard deviations of the residuals."""
MIN_POINTS = 20
MAX_PAIRS_POINTS = 400
"""Theil-Sen over at most this many evenly spaced points (80,000 pairs): a live tick's cost."""


class Growth(msgspec.Struct, frozen=True):
    """A steady rise of one memory series."""

    bytes_per_step: float
    first_step: int
    last_step: int
    first_bytes: float
    """The fitted line's value at the first step."""
    last_bytes: float
    """The last measured value."""


def robust_sigma(values: Floats) -> float:
    """The standard deviation a normal scatter would have, from the median absolute deviation:
    one outlier (a stall, a spike) does not move it."""
    return 1.4826 * float(np.median(np.abs(values - np.median(values))))


def theil_sen(x: Floats, y: Floats) -> tuple[float, float]:
    """The median of pairwise slopes, and the intercept that centres the residuals."""
    if len(x) > MAX_PAIRS_POINTS:
        keep = np.linspace(0, len(x) - 1, MAX_PAIRS_POINTS).astype(np.int64)
        x, y = x[keep], y[keep]
    i, j = np.triu_indices(len(x), k=1)
    dx = x[j] - x[i]
    usable = dx != 0
    if not usable.any():
        return 0.0, float(np.median(y))
    slope = float(np.median((y[j] - y[i])[usable] / dx[usable]))
    return slope, float(np.median(y - slope * x))


def steady_growth(steps: Floats, values: Floats, min_total_bytes: float) -> Growth | None:
    """The steady rise of `values` (bytes) over `steps` (numbers, ascending), or None where it
    does not grow steadily past noise and past `min_total_bytes` over the series."""
    measured = ~np.isnan(values)
    x, y = steps[measured], values[measured]
    if len(x) < MIN_POINTS or x[-1] <= x[0]:
        return None
    slope, intercept = theil_sen(x, y)
    span = float(x[-1] - x[0])
    rise = slope * span
    residuals = y - (slope * x + intercept)
    noise = robust_sigma(residuals)
    if slope <= 0 or rise < min_total_bytes or rise < NOISE_MULTIPLE * noise:
        return None
    if not _rises_in_every_segment(x, y, slope):
        return None
    return Growth(
        bytes_per_step=slope,
        first_step=int(x[0]),
        last_step=int(x[-1]),
        first_bytes=slope * float(x[0]) + intercept,
        last_bytes=float(y[-1]),
    )


def _rises_in_every_segment(x: Floats, y: Floats, slope: float) -> bool:
    pieces = np.array_split(np.arange(len(x)), SEGMENTS)
    medians = [float(np.median(y[p])) for p in pieces]
    centres = [float(np.median(x[p])) for p in pieces]
    for k in range(1, SEGMENTS):
        expected = slope * (centres[k] - centres[k - 1])
        if medians[k] - medians[k - 1] < MIN_SEGMENT_RISE * expected:
            return False
    return True
