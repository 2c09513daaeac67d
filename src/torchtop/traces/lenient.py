"""Read what the typed decoders refuse: whole JSON whose fields have odd types.

The fast path decodes a piece of the event array straight into typed Structs; one event with
a list for `args` or text for `pid` makes msgspec refuse the whole piece. Only then is the piece
parsed as plain JSON and each entry converted alone, so that every event that fits is kept and
the others are counted by the field that did not fit (`set_aside.field_of`).
"""

from __future__ import annotations

import msgspec

from torchtop.traces.schema import EVENT_DECODER, KNOWN_PHASES, Event, TraceHeader
from torchtop.traces.set_aside import field_of

NESTED_TOO_DEEP = "arrays or objects nested over a thousand levels deep: not a PyTorch trace"
"""What a document (or one event) nested past msgspec's recursion limit is told; no trace
nests so: Kineto's args go a few levels down."""


def convert_events(items: object) -> tuple[list[Event], dict[str, int]]:
    """The entries of an event array (plain JSON values) that are events, and how many of the
    others had each field of the wrong type (`event`: an entry that is not an object).

    An event of a phase the format does not define (or with none) is not malformed, just of
    no use: it is passed over, as the analysis would pass over it. A phase that is not a
    string at all is a wrong type."""
    if not isinstance(items, list):
        items = [items]
    events = []
    fields: dict[str, int] = {}
    for item in items:
        try:
            events.append(EVENT_DECODER.decode(msgspec.json.encode(item)))
        except msgspec.ValidationError as exc:
            if isinstance(item, dict) and _unknown_phase(item.get("ph")):
                continue
            field = field_of(exc, item)
            fields[field] = fields.get(field, 0) + 1
    return events, fields


def convert_header(keys: dict[str, object]) -> tuple[TraceHeader, bool]:
    """The document's keys other than the event array that have the types the header
    expects, and whether every one did."""
    header = TraceHeader()
    whole = True
    for name in TraceHeader.__struct_fields__:
        if name not in keys:
            continue
        try:
            one = msgspec.convert({name: keys[name]}, TraceHeader)
        except msgspec.ValidationError:
            whole = False
            continue
        setattr(header, name, getattr(one, name))
    return header, whole


def _unknown_phase(phase: object) -> bool:
    return phase is None or (isinstance(phase, str) and phase not in KNOWN_PHASES)
