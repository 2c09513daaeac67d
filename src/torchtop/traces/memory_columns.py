"""The `[memory]` instant events of a batch as columns (Kineto, `profile_memory=True`).

Each event is one allocation (`Bytes` > 0) or free (`Bytes` < 0) on one device: `Device Type`
0 is the CPU, 1 a CUDA device (`Device Id`); `Total Allocated` and `Total Reserved` are the
allocator's totals after it, `Addr` the block's address (which pairs a free with its
allocation) and the thread (`tid`) the one that asked. Kineto wrote them without a category
until 2021 and as `cpu_instant_event` since; both are read. Columns are built in bulk, like
the spans' (`columns.py`): no Python statement per event beyond telling them apart.
"""

from __future__ import annotations

from collections.abc import Callable
from operator import attrgetter

import numpy as np

from torchtop.traces.schema import NO_ARGS, InstantEvent

MEMORY_NAME = "[memory]"
MEMORY_CATEGORIES = (None, "cpu_instant_event")

_ARGS, _TS, _TID = attrgetter("args"), attrgetter("ts"), attrgetter("tid")
_FIELDS = {
    "bytes": attrgetter("memory_bytes"),
    "total": attrgetter("total_allocated"),
    "reserved": attrgetter("total_reserved"),
}
_IDS = {
    "device": attrgetter("device_id"),
    "device_type": attrgetter("device_type"),
    "address": attrgetter("address"),
}


def is_memory_event(event: object) -> bool:
    return (
        type(event) is InstantEvent and event.name == MEMORY_NAME and event.cat in MEMORY_CATEGORIES
    )


def memory_columns(
    events: list[InstantEvent],
    floats: Callable[[list[object]], np.ndarray],
    ids: Callable[[list[object]], np.ndarray],
    threads: Callable[[list[object]], np.ndarray],
) -> dict[str, np.ndarray]:
    """The events' columns: `ts`, `bytes`, `total`, `reserved` (NaN where not written),
    `device`, `device_type`, `address` (-1 where not written) and `thread` (a thread code)."""
    args = [a if a is not None else NO_ARGS for a in map(_ARGS, events)]
    columns = {"ts": floats(list(map(_TS, events)))}
    columns.update({key: floats(list(map(get, args))) for key, get in _FIELDS.items()})
    columns.update({key: ids(list(map(get, args))) for key, get in _IDS.items()})
    columns["thread"] = threads(list(map(_TID, events)))
    return columns
