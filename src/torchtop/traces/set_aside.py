"""Why an event is set aside: the field of the wrong type, or a time no profiler writes.

The reader keeps every event it can use and counts the others by cause, so that a report can
say what it did not see. These helpers run only on the events that already failed a check
(a failed decode, a NaN or out-of-range time): a clean trace never calls them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

import msgspec

TS_LIMIT_US = 2.0**53
"""The largest timestamp taken as real: 2**53 µs is 285 years after the epoch, and beyond it
float64 no longer holds whole microseconds. Kineto writes ~1.7e15 (epoch µs) or less."""

NOT_AN_EVENT = "event"
"""The cause named for an entry of the event array that is not a JSON object."""

_AT_FIELD = re.compile(r"- at `\$\.([^.`\[]+)")


def field_of(error: msgspec.ValidationError, item: object) -> str:
    """The top-level field an event failed to decode on (`args`, `ts`, `tid`, ...)."""
    if not isinstance(item, dict):
        return NOT_AN_EVENT
    found = _AT_FIELD.search(str(error))
    return found.group(1) if found else "ph"


def wrong_field(ts: object, dur: object) -> str | None:
    """The field that makes a decoded span's time unreadable (missing or not a number), or
    None when both are numbers and the time itself is impossible."""
    if not _numeric(ts):
        return "ts"
    if dur is not None and not _numeric(dur):
        return "dur"
    return None


def _numeric(value: object) -> bool:
    if isinstance(value, bool) or value is None:
        return False
    if isinstance(value, int | float):
        return True
    try:
        float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return False
    return True


def add_counts(into: dict[str, int], counts: Mapping[str, int]) -> None:
    for key, count in counts.items():
        into[key] = into.get(key, 0) + count


def count_causes(
    starts: Sequence[object], durs: Sequence[object] | None, bad: Sequence[int]
) -> tuple[dict[str, int], int]:
    """For the events at indexes `bad`: how many had each field of the wrong type, and how
    many had numbers for times that cannot be (`impossible`)."""
    fields: dict[str, int] = {}
    impossible = 0
    for index in bad:
        field = wrong_field(starts[index], None if durs is None else durs[index])
        if field is None:
            impossible += 1
        else:
            fields[field] = fields.get(field, 0) + 1
    return fields, impossible
