"""Which span encloses an instant, on the instant's own thread, in bulk.

A thread's operators nest properly (a child starts and ends inside its parent), so the
top-level ones are those that start at or after every earlier one ended; the top-level span
that encloses an instant is then the last one starting at or before it, if it has not ended.
Everything is a sort and a `searchsorted`: no Python statement per span or instant.
"""

from __future__ import annotations

import numpy as np

from torchtop.traces.data import Floats, Ints


def top_level(start_us: Floats, end_us: Floats, thread: Ints) -> Ints:
    """The indices of the spans that no other span of their thread encloses, ordered by
    thread, then start."""
    if len(start_us) == 0:
        return np.zeros(0, dtype=np.int64)
    order = np.lexsort((-end_us, start_us, thread))
    ends = end_us[order]
    threads = thread[order]
    new_thread = np.empty(len(order), dtype=bool)
    new_thread[0] = True
    np.not_equal(threads[1:], threads[:-1], out=new_thread[1:])
    # The latest end so far within the thread: reset at each thread's first span.
    group = np.cumsum(new_thread) - 1
    offset = (group * (float(ends.max()) - float(ends.min()) + 1.0)).astype(np.float64)
    running = np.maximum.accumulate(ends + offset) - offset
    previous = np.empty(len(order))
    previous[0] = -np.inf
    previous[1:] = running[:-1]
    previous[new_thread] = -np.inf
    keep = start_us[order] >= previous
    return order[keep]


def enclosing_top_level(
    start_us: Floats, end_us: Floats, thread: Ints, at_us: Floats, at_thread: Ints
) -> Ints:
    """For each instant (`at_us` on `at_thread`), the index of the top-level span of its
    thread that encloses it (start <= at < end), or -1."""
    result = np.full(len(at_us), -1, dtype=np.int64)
    tops = top_level(start_us, end_us, thread)
    if len(tops) == 0 or len(at_us) == 0:
        return result
    # Sort key: thread first, then start; instants are placed on the same key.
    scale = float(max(np.abs(start_us).max(), np.abs(at_us).max())) * 4.0 + 1.0
    keys = thread[tops] * scale + start_us[tops]
    found = np.searchsorted(keys, at_thread * scale + at_us, side="right") - 1
    valid = found >= 0
    candidate = tops[np.where(valid, found, 0)]
    inside = (
        valid & (thread[candidate] == at_thread) & (start_us[candidate] <= at_us)
        & (at_us < end_us[candidate])
    )  # fmt: skip
    result[inside] = candidate[inside]
    return result
