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
    times, series = memory
    memory_index = np.minimum(((times - started) / bucket_s).astype(np.int64), count - 1)
    buckets = [
        _bucket(k, bucket_s, walls_s[index == k], int(stalled[index == k].sum()))
        for k in range(count)
    ]
    for name, values in series.items():
        for k, bucket in enumerate(buckets):
            inside = values[(memory_index == k) & ~np.isnan(values)]
            if len(inside):
                buckets[k] = _with(bucket, name, float(inside.max()))
    return Timeline(started_at=started, bucket_s=bucket_s, buckets=tuple(buckets))


def _bucket(k: int, bucket_s: float, walls_s: Floats, stalls: int) -> TimelineBucket:
    total = float(walls_s.sum())
    return TimelineBucket(
        start_s=round(k * bucket_s, 3),
        end_s=round((k + 1) * bucket_s, 3),
        steps=len(walls_s),
        steps_per_s=len(walls_s) / total if total > 0 else None,
        stalls=stalls,
    )


def _with(bucket: TimelineBucket, name: str, value: float) -> TimelineBucket:
    return msgspec.structs.replace(bucket, **{name: value})
