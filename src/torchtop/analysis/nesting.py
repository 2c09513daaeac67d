"""Which span encloses an instant, on the instant's own thread, in bulk.

A thread's operators nest properly (a child starts and ends inside its parent), so the
top-level ones are those that start at or after every earlier one ended; the top-level span
that encloses an instant is then the last one starting at or before it, if it has not ended.
Everything is a sort and a `searchsorted`: no Python statement per span or instant.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from torchtop.analysis.vocabulary import distinct
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


def innermost(
    start_us: Floats, end_us: Floats, thread: Ints, at_us: Floats, at_thread: Ints
) -> Ints:
    """For each instant, the index of the innermost span of its thread that encloses it, or -1.
    Level by level: the top-level spans, then the top-level spans of those left, and so on;
    only spans inside one that enclosed an instant go on to the next level."""
    result = np.full(len(at_us), -1, dtype=np.int64)
    remaining = np.arange(len(start_us))
    while len(remaining) and len(at_us):
        s, e, t = start_us[remaining], end_us[remaining], thread[remaining]
        found = enclosing_top_level(s, e, t, at_us, at_thread)
        hit = found >= 0
        result[hit] = remaining[found[hit]]
        tops = top_level(s, e, t)
        enclosing = distinct(found[hit])
        below = np.ones(len(remaining), dtype=np.bool_)
        below[tops] = False
        # Keep the spans inside a top-level span that enclosed an instant.
        parent = enclosing_top_level(s[enclosing], e[enclosing], t[enclosing], s, t)
        remaining = remaining[below & (parent >= 0)]
    return result


def holds_another(start: Floats, end: Floats, thread: Ints) -> npt.NDArray[np.bool_]:
    """Which of the spans hold another of them on their thread."""
    order = np.lexsort((-end, start, thread))
    # Spans nest properly: the next one in (thread, start, longest first) order is inside
    # this one exactly when it starts before this one ends.
    outer = np.zeros(len(order), dtype=np.bool_)
    following = order[1:]
    outer[order[:-1]] = (thread[following] == thread[order[:-1]]) & (
        start[following] < end[order[:-1]]
    )
    return outer
