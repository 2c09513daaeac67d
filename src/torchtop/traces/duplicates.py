"""Events written more than once: found through the steps, dropped, counted.

A trace whose events were written twice (two exports of one profile joined, a tool that
appended instead of replacing) reads as twice the steps at the same times, and every share
counted twice. Its sign is cheap to see: a `ProfilerStep#N` span repeated exactly (same name,
start and duration). Only then are the other columns searched for exact repeats, so that a
clean trace pays for one look at its few step spans.
"""

from __future__ import annotations

import numpy as np

from torchtop.traces.columns import ColumnBuilder, SpanColumns
from torchtop.traces.data import Bools
from torchtop.traces.messages import MessageColumns


def drop_duplicates(builder: ColumnBuilder) -> int:
    """Drop the events that repeat another exactly, keeping the first of each; how many were
    dropped (the Python calls, which count for no event, are dropped uncounted)."""
    if not _steps_repeat(builder.step_columns):
        return 0
    dropped = sum(
        _drop_repeats(columns)
        for columns in (*builder.kinds.values(), builder.step_columns, builder.memory)
    )
    _drop_repeats(builder.python)
    _drop_repeated_messages(builder.messages)
    return dropped


def _steps_repeat(steps: SpanColumns) -> bool:
    keys = ("name", "start", "dur")
    if not all(steps.parts.get(key) for key in keys):
        return False
    columns = {key: np.concatenate(steps.parts[key]) for key in keys}
    return not bool(first_of_each(columns).all())


def _drop_repeats(columns: SpanColumns) -> int:
    if not columns.pieces:
        return 0
    joined = columns.take_joined()
    keep = first_of_each(joined)
    columns.add({key: values[keep] for key, values in joined.items()})
    return int(len(keep) - np.count_nonzero(keep))


def _drop_repeated_messages(messages: MessageColumns) -> None:
    if not messages.parts:
        return
    parts = [c for _, c in sorted(messages.parts, key=lambda p: p[0])]
    joined = {key: np.concatenate([c[key] for c in parts]) for key in parts[0]}
    keep = first_of_each(joined)
    messages.parts = [(0, {key: values[keep] for key, values in joined.items()})]


def first_of_each(columns: dict[str, np.ndarray]) -> Bools:
    """True for each row (one value per column) that no earlier row equals in every column;
    NaN equals NaN here, as a field missing twice is the same field."""
    keys = list(columns.values())
    count = len(keys[0]) if keys else 0
    keep = np.ones(count, dtype=np.bool_)
    if count < 2:
        return keep
    order = np.lexsort(keys[::-1])  # stable: among equal rows, the first in file order leads
    same = np.ones(count - 1, dtype=np.bool_)
    for values in keys:
        ranked = values[order]
        equal = ranked[1:] == ranked[:-1]
        if ranked.dtype.kind == "f":
            equal |= np.isnan(ranked[1:]) & np.isnan(ranked[:-1])
        same &= equal
    keep[order[1:][same]] = False
    return keep
