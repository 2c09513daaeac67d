"""The whole run cut into equal spans of time: each span's steps/s, memory and stalls.

Steps are placed by their end time, memory points by the step end they were read at; a span
with no step has no rate (None), not a rate of 0, since a run paused by a debugger or waiting
for a rank has not been measured slow.
"""

from __future__ import annotations

import math

import msgspec
import numpy as np
import numpy.typing as npt

from torchtop.model.timeline import Timeline, TimelineBucket

Floats = npt.NDArray[np.float64]

MAX_BUCKETS = 60
MIN_BUCKET_S = 1.0


def timeline(
    ends_t: Floats,
    walls_s: Floats,
    stalled: npt.NDArray[np.bool_],
    memory: tuple[Floats, dict[str, Floats]],
) -> Timeline | None:
    """The timeline of steps ending at `ends_t` (ascending) with `walls_s`, `stalled` marking
    the first step of each stall, and `memory`: the times of memory readings and each series
    by its name (`rss_bytes`, `cuda_allocated_bytes`, `cuda_reserved_bytes`)."""
    known = ~np.isnan(ends_t)
    if not known.any():
        return None
    ends_t, walls_s, stalled = ends_t[known], walls_s[known], stalled[known]
    started = float(ends_t[0] - walls_s[0])
    span_s = float(ends_t[-1]) - started
    bucket_s = max(MIN_BUCKET_S, span_s / MAX_BUCKETS)
    count = max(1, math.ceil(span_s / bucket_s))
    index = np.minimum(((ends_t - started) / bucket_s).astype(np.int64), count - 1)
    # Sums by bucket in one pass each: a run of a million steps is read every live tick.
    steps = np.bincount(index, minlength=count)
    totals = np.bincount(index, weights=walls_s, minlength=count)
    stalls = np.bincount(index, weights=stalled.astype(np.float64), minlength=count)
    buckets = [
        TimelineBucket(
            start_s=round(k * bucket_s, 3),
            end_s=round((k + 1) * bucket_s, 3),
            steps=int(steps[k]),
            steps_per_s=float(steps[k] / totals[k]) if totals[k] > 0 else None,
            stalls=int(stalls[k]),
        )
        for k in range(count)
    ]
    times, series = memory
    for name, values in series.items():
        peaks = _peaks(times, values, started, bucket_s, count)
        buckets = [
            b if np.isnan(peak) else msgspec.structs.replace(b, **{name: float(peak)})
            for b, peak in zip(buckets, peaks, strict=True)
        ]
    return Timeline(started_at=started, bucket_s=bucket_s, buckets=tuple(buckets))


def _peaks(times: Floats, values: Floats, started: float, bucket_s: float, count: int) -> Floats:
    """The highest of `values` read in each bucket; NaN where none was."""
    read = ~np.isnan(values) & ~np.isnan(times)
    index = np.clip(((times[read] - started) / bucket_s).astype(np.int64), 0, count - 1)
    peaks = np.full(count, np.nan)
    np.fmax.at(peaks, index, values[read])
    return peaks
