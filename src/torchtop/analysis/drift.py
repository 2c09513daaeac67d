"""Speed that drifts: steps/s over the whole run in buckets, and whether it fell past noise.

The run's steps are cut into `BUCKETS` buckets of equal step counts; a bucket's rate is the
inverse of its median step wall, so a periodic stall or a few slow steps do not move it. The
rate fell when the median of the last third of the buckets stands under that of the first
third by at least `MIN_FALL` and by `NOISE_MULTIPLE` times what the buckets' own scatter
explains (a median's standard error: 1.25 sigma / sqrt(n), sigma from the median absolute
deviation of each bucket's walls), and the last bucket is as slow.
"""

from __future__ import annotations

import msgspec
import numpy as np
import numpy.typing as npt

from torchtop.analysis.growth import robust_sigma

Floats = npt.NDArray[np.float64]

BUCKETS = 10
MIN_STEPS = 100
MIN_FALL = 0.1
"""A fall of steps/s under 10% is not called drift, whatever the noise."""
NOISE_MULTIPLE = 4.0


class Drift(msgspec.Struct, frozen=True):
    """Steps/s that fell from `early_per_s` to `late_per_s` over the run."""

    early_per_s: float
    late_per_s: float
    fall: float
    """1 - late / early (0-1)."""
    first_slow_bucket: int
    """The first bucket under the midpoint of the two rates (0-based)."""
    bucket_steps: int


def bucket_rates(walls_s: Floats, buckets: int = BUCKETS) -> tuple[Floats, Floats]:
    """Each bucket's rate (1 / its median wall) and the relative standard error of it."""
    parts = np.array_split(walls_s, buckets)
    medians = np.array([float(np.median(p)) for p in parts])
    spread = np.array([robust_sigma(p) for p in parts])
    sizes = np.array([len(p) for p in parts], dtype=np.float64)
    relative_error = 1.25 * spread / np.sqrt(sizes) / medians
    return 1.0 / medians, relative_error


def falling_rate(walls_s: Floats) -> Drift | None:
    """The drift of a run's step walls (oldest first), or None where it holds its speed."""
    if len(walls_s) < MIN_STEPS or float(np.min(walls_s)) <= 0:
        return None
    rates, errors = bucket_rates(walls_s)
    third = BUCKETS // 3
    early = float(np.median(rates[:third]))
    late = float(np.median(rates[-third:]))
    fall = 1.0 - late / early
    noise = float(np.hypot(np.median(errors[:third]), np.median(errors[-third:])))
    if fall < max(MIN_FALL, NOISE_MULTIPLE * noise) or rates[-1] > early * (1 - fall / 2):
        return None
    midpoint = (early + late) / 2
    first_slow = int(np.argmax(rates < midpoint))
    return Drift(
        early_per_s=early,
        late_per_s=late,
        fall=fall,
        first_slow_bucket=first_slow,
        bucket_steps=len(walls_s) // BUCKETS,
    )
