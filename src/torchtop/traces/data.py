"""The columnar form of one trace file: numpy arrays per event kind, names interned once.

Analysis works on whole arrays (sort, merge, searchsorted), never on per-event objects, so a
trace of millions of events costs a few arrays of floats. Times are microseconds, relative to
`origin_us` (the first event's timestamp) so that float64 keeps sub-microsecond precision.
"""

from __future__ import annotations

from typing import Any

import msgspec
import numpy as np
import numpy.typing as npt

from torchtop.model.analysis import PythonCalls
from torchtop.model.trace import DeviceInfo, TraceInfo

Floats = npt.NDArray[np.float64]
Ints = npt.NDArray[np.signedinteger[Any]]
"""Integer columns: int64, or int32 where the reader found every value fits (codes, ids)."""
Bools = npt.NDArray[np.bool_]

NO_ID = -1
"""Stands for a missing correlation or external id in the int arrays."""


def empty_floats() -> Floats:
    return np.zeros(0, dtype=np.float64)


def empty_ints() -> Ints:
    return np.zeros(0, dtype=np.int64)


class Spans(msgspec.Struct):
    """Intervals with an optional per-interval name code, thread code and ids."""

    start_us: Floats = msgspec.field(default_factory=empty_floats)
    end_us: Floats = msgspec.field(default_factory=empty_floats)
    name: Ints = msgspec.field(default_factory=empty_ints)
    thread: Ints = msgspec.field(default_factory=empty_ints)
    correlation: Ints = msgspec.field(default_factory=empty_ints)
    external_id: Ints = msgspec.field(default_factory=empty_ints)
    device: Ints = msgspec.field(default_factory=empty_ints)

    def __len__(self) -> int:
        return len(self.start_us)

    @property
    def dur_us(self) -> Floats:
        return self.end_us - self.start_us

    def select(self, mask: npt.NDArray[np.bool_]) -> Spans:
        return Spans(
            self.start_us[mask],
            self.end_us[mask],
            self.name[mask],
            self.thread[mask],
            self.correlation[mask],
            self.external_id[mask],
            self.device[mask],
        )


class Copies(msgspec.Struct):
    """Memcpy events: the spans plus bytes, direction and whether host memory was pinned."""

    spans: Spans = msgspec.field(default_factory=Spans)
    bytes: Floats = msgspec.field(default_factory=empty_floats)
    kind: Ints = msgspec.field(default_factory=empty_ints)
    """0 HtoD, 1 DtoH, 2 DtoD, 3 other (PtoP, unknown)."""
    pageable: npt.NDArray[np.bool_] = msgspec.field(
        default_factory=lambda: np.zeros(0, dtype=np.bool_)
    )


COPY_KINDS = ("HtoD", "DtoH", "DtoD", "other")


class Messages(msgspec.Struct):
    """The collectives' own records (`record_param_comms` operators): one per call, with the
    sizes the device kernels do not always carry. `collective` codes into `names`, the
    trace's `Collective name` words (`allreduce`, `_allgather_base`); a size not written is
    NaN, and `element_bytes` is NaN for a dtype whose size is not known."""

    start_us: Floats = msgspec.field(default_factory=empty_floats)
    end_us: Floats = msgspec.field(default_factory=empty_floats)
    collective: Ints = msgspec.field(default_factory=empty_ints)
    names: list[str] = msgspec.field(default_factory=list)
    in_nelems: Floats = msgspec.field(default_factory=empty_floats)
    out_nelems: Floats = msgspec.field(default_factory=empty_floats)
    element_bytes: Floats = msgspec.field(default_factory=empty_floats)
    group_size: Floats = msgspec.field(default_factory=empty_floats)

    def __len__(self) -> int:
        return len(self.start_us)


CPU_DEVICE_TYPE, CUDA_DEVICE_TYPE = 0, 1
"""Kineto's `Device Type` of a `[memory]` event."""


class MemoryTrack(msgspec.Struct):
    """`[memory]` instant events (CPU and devices): each allocation (bytes > 0) or free, the
    allocator's totals after it where written (NaN otherwise), the block's address and the
    thread that asked (-1 where not written)."""

    ts_us: Floats = msgspec.field(default_factory=empty_floats)
    bytes: Floats = msgspec.field(default_factory=empty_floats)
    total_allocated: Floats = msgspec.field(default_factory=empty_floats)
    device: Ints = msgspec.field(default_factory=empty_ints)
    total_reserved: Floats = msgspec.field(default_factory=empty_floats)
    device_type: Ints = msgspec.field(default_factory=empty_ints)
    address: Ints = msgspec.field(default_factory=empty_ints)
    thread: Ints = msgspec.field(default_factory=empty_ints)

    def __len__(self) -> int:
        return len(self.ts_us)


class TraceData(msgspec.Struct):
    """Everything analysis needs from one trace file (one rank, one span)."""

    info: TraceInfo
    names: list[str]
    threads: list[str]
    origin_us: float
    kernels: Spans
    copies: Copies
    memsets: Spans
    runtime: Spans
    ops: Spans
    """CPU operators (`cpu_op`, `Operator`, `Python`), ProfilerStep excluded."""
    annotations: Spans
    """CPU-side `user_annotation` ranges, ProfilerStep excluded."""
    steps: Spans
    """ProfilerStep ranges as the host saw them; `name` holds the step number."""
    syncs: Spans
    """`cuda_sync` events (the device side of a synchronisation)."""
    memory: MemoryTrack
    profiler_span: tuple[float, float] | None
    devices: list[DeviceInfo] = msgspec.field(default_factory=list)
    op_sequence: Ints = msgspec.field(default_factory=empty_ints)
    """Each operator's autograd `Sequence number` (NO_ID where none), aligned with `ops`: a
    backward operator carries the one of the forward operator it differentiates."""
    python: PythonCalls | None = None
    """`python_function` events (with_stack=True), for locating code fixes; None: none."""
    messages: Messages = msgspec.field(default_factory=Messages)
    """The collectives' calls with their sizes; empty where the trace records none."""
    op_shape: Ints = msgspec.field(default_factory=empty_ints)
    """Each operator's code into `shapes` (NO_ID where it recorded none), aligned with `ops`;
    empty where no operator recorded its arguments (`record_shapes=False`)."""
    shapes: list[bytes] = msgspec.field(default_factory=list)
    """The distinct `Input Dims`, `Input type` and `Concrete Inputs` of the operators, as the
    trace's JSON text (`traces.shapes.decoded` parses one)."""

    def name_of(self, code: int) -> str:
        return self.names[code]
