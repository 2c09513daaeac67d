"""The typed shape of a Kineto trace event, as msgspec Structs naming only the fields we use.

Decoding into Structs that name a handful of fields is several times faster than `json.loads`
and skips everything else in the file (call stacks, strides) without building it; an
operator's input shapes are kept unparsed (`msgspec.Raw`, see `traces.shapes`).
Structs are created with `gc=False`: they hold no reference cycles, and keeping millions of
them out of the cyclic garbage collector's sight saves its repeated full scans.
Scalar fields are typed as loose unions because real files put strings, floats and
integers beyond int64 in places where the schema promises an int.
"""

from __future__ import annotations

from typing import Any, Union

import msgspec

Scalar = int | float | str | None

NO_RAW = msgspec.Raw()
"""The value of an argument the event does not carry."""


class EventArgs(msgspec.Struct, gc=False):
    """The `args` fields that any analysis reads; every one is optional."""

    external_id_upper: Scalar = msgspec.field(name="External id", default=None)
    external_id_lower: Scalar = msgspec.field(name="external id", default=None)
    correlation: Scalar = None
    device: Scalar = None
    stream: Scalar = None
    bytes: Scalar = None
    memory_bytes: Scalar = msgspec.field(name="Bytes", default=None)
    total_allocated: Scalar = msgspec.field(name="Total Allocated", default=None)
    total_reserved: Scalar = msgspec.field(name="Total Reserved", default=None)
    address: Scalar = msgspec.field(name="Addr", default=None)
    device_type: Scalar = msgspec.field(name="Device Type", default=None)
    device_id: Scalar = msgspec.field(name="Device Id", default=None)
    name: Scalar = None
    labels: Scalar = None
    collective_name: Scalar = msgspec.field(name="Collective name", default=None)
    process_group_backend: Scalar = msgspec.field(name="Process Group Backend", default=None)
    in_msg_nelems: Scalar = msgspec.field(name="In msg nelems", default=None)
    out_msg_nelems: Scalar = msgspec.field(name="Out msg nelems", default=None)
    dtype: Scalar = None
    group_size: Scalar = msgspec.field(name="Group size", default=None)
    python_id: Scalar = msgspec.field(name="Python id", default=None)
    python_parent_id: Scalar = msgspec.field(name="Python parent id", default=None)
    sequence: Scalar = msgspec.field(name="Sequence number", default=None)
    """An operator's autograd sequence number: a backward op carries its forward op's."""
    # An operator's recorded arguments (`record_shapes=True`), left as JSON text: parsed only
    # for the operators that need them (`traces.shapes`).
    input_dims: msgspec.Raw = msgspec.field(name="Input Dims", default=NO_RAW)
    input_dims_lower: msgspec.Raw = msgspec.field(name="Input dims", default=NO_RAW)
    """The spelling of PyTorch 1.8 and 1.9's traces."""
    input_type: msgspec.Raw = msgspec.field(name="Input type", default=NO_RAW)
    concrete_inputs: msgspec.Raw = msgspec.field(name="Concrete Inputs", default=NO_RAW)


class SpanEvent(msgspec.Struct, gc=False, tag="X", tag_field="ph"):
    """A complete event (`"ph": "X"`): an operator, kernel, copy, runtime call, annotation."""

    cat: Scalar = None
    name: Scalar = None
    pid: Scalar = None
    tid: Scalar = None
    ts: Scalar = None
    dur: Scalar = None
    args: EventArgs | None = None


class InstantEvent(msgspec.Struct, gc=False, tag="i", tag_field="ph"):
    """An instant event (`"ph": "i"`); analysis keeps the `[memory]` ones."""

    cat: Scalar = None
    name: Scalar = None
    tid: Scalar = None
    ts: Scalar = None
    args: EventArgs | None = None


class OtherEvent(msgspec.Struct, gc=False, tag_field="ph"):
    """Every other kind of event (flows, metadata, counters, ...): counted, not read. msgspec
    skips their fields without building them, which is most of the decoding it saves."""


class MetadataEvent(OtherEvent, tag="M"):
    """A metadata event (`"ph": "M"`: process and thread names): only its category is read,
    so that the tracks `torchtop analyze --annotate` adds (category `torchtop`) are skipped."""

    cat: Scalar = None


OWN_CATEGORY = "torchtop"
"""The category of the events `--annotate` adds to a trace: the reader counts them nowhere, so
an annotated trace reads as the original did."""

# The phases of the chrome trace event format other than X, i and M, each its own tagged class:
# the decoder tells the kinds apart by `ph` alone, so the columns never look at it.
OTHER_PHASES = "BEIbnesStTpFfPONDRcCVv()"
_OTHERS = tuple(
    msgspec.defstruct(f"Phase_{ph if ph.isalpha() else ord(ph)}", [], bases=(OtherEvent,), tag=ph)
    for ph in OTHER_PHASES
)

KNOWN_PHASES = frozenset("XiM" + OTHER_PHASES)

Event = SpanEvent | InstantEvent | OtherEvent
"""One entry of `traceEvents`, typed by its phase."""

_EVENT_UNION: Any = Union[(SpanEvent, InstantEvent, MetadataEvent, *_OTHERS)]  # built at runtime


class DeviceProperties(msgspec.Struct):
    id: Scalar = None
    name: Scalar = None
    totalGlobalMem: Scalar = None
    computeMajor: Scalar = None
    computeMinor: Scalar = None
    numSms: Scalar = None


class DistributedInfo(msgspec.Struct):
    backend: Scalar = None
    rank: Scalar = None
    world_size: Scalar = None
    nccl_version: Scalar = None


class TraceHeader(msgspec.Struct):
    """The document's keys other than the event array; they may sit before or after it."""

    schemaVersion: Scalar = None
    deviceProperties: list[DeviceProperties] | None = None
    distributedInfo: DistributedInfo | None = None
    traceName: Scalar = None
    displayTimeUnit: Scalar = None
    baseTimeNanoseconds: Scalar = None


class TraceTail(TraceHeader):
    """What follows the event array: the last events plus any keys written after them."""

    traceEvents: list[_EVENT_UNION] = msgspec.field(default_factory=list)


NO_ARGS = EventArgs()

EVENT_DECODER: msgspec.json.Decoder[Event] = msgspec.json.Decoder(_EVENT_UNION)
"""One event, for the lenient path (`traces.lenient`): an event re-encoded and decoded alone
costs ~5 µs, where `msgspec.convert` to the union took ~110 µs."""
EVENT_LIST_DECODER: msgspec.json.Decoder[list[Event]] = msgspec.json.Decoder(list[_EVENT_UNION])
HEADER_DECODER = msgspec.json.Decoder(TraceHeader)
TAIL_DECODER = msgspec.json.Decoder(TraceTail)
