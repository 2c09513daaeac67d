"""The result of analysing a trace: per-step costs, named metrics and top lists, per rank."""

from __future__ import annotations

from typing import Any

import msgspec
import numpy as np
import numpy.typing as npt

from torchtop.model.efficiency import Efficiency
from torchtop.model.memory import DeviceMemory, ModuleTree
from torchtop.model.trace import DeviceInfo, TraceInfo

MetricValue = float | int | bool | str | None
Metrics = dict[str, MetricValue]


class StepCost(msgspec.Struct, frozen=True):
    """One step: where it starts, how long it took and how that time splits by category."""

    number: int
    start_us: float
    duration_us: float
    parts_us: dict[str, float]
    """Only what was measured of this step: every category where a profiler window covered
    it; else its DataLoader wait alone (the agent times it every step), or nothing."""
    profiled: bool = True
    """Whether a profiler window covered this step (a trace's steps all are)."""


class NamedTime(msgspec.Struct, frozen=True):
    """A kernel or operator name with its call count and time."""

    name: str
    count: int
    total_us: float
    share: float
    """Of all kernel time (kernels) or of all operator self time (operators)."""
    tensor_cores: bool | None = None


class CopyStat(msgspec.Struct, frozen=True):
    """Memcpy traffic of one direction and memory kind."""

    kind: str
    pageable: bool
    count: int
    bytes: float
    total_us: float
    gb_per_s: float | None


class MessageSizes(msgspec.Struct, frozen=True):
    """One collective kind's message sizes (bytes: the larger of a call's input and output
    buffers) and, where the calls' time is known, NCCL-tests' algbw and busbw in GB/s."""

    count: int
    total_bytes: float
    median_bytes: float
    largest_bytes: float
    group_size: int | None
    algbw_gbps: float | None
    busbw_gbps: float | None
    timed_bytes: float = 0.0
    """The bytes of the calls whose time is known, and that time: algbw's terms, kept so
    that pooling files or ranks gives the same bandwidth as one trace would."""
    timed_us: float = 0.0


class CommStat(msgspec.Struct, frozen=True):
    """One collective kind's calls: count, time and share of step time; bytes where known."""

    kind: str
    count: int
    total_us: float
    share: float | None
    bytes: float | None = None
    sizes: MessageSizes | None = None
    """None where the trace records no sizes for this kind."""


class PythonCalls(msgspec.Struct, frozen=True):
    """One trace's `python_function` events (Kineto `with_stack=True`), only what locating a
    code fix needs: each call's `name` (a code into `names`, "file(line): function"), its
    duration and its `Python id` / `Python parent id` (-1 where missing). Arrays, not events,
    so a pool worker sends them back cheaply; the stacks are built only for a code fix."""

    names: list[str]
    name: npt.NDArray[np.signedinteger[Any]]
    """int32 or int64, as the reader made it (the values are what count)."""
    dur_us: npt.NDArray[np.float64]
    ident: npt.NDArray[np.signedinteger[Any]]
    parent: npt.NDArray[np.signedinteger[Any]]
    start_us: npt.NDArray[np.float64] = msgspec.field(
        default_factory=lambda: np.zeros(0, dtype=np.float64)
    )
    """Each call's start, relative to the trace's origin (the modules' tree needs it)."""
    thread: npt.NDArray[np.signedinteger[Any]] = msgspec.field(
        default_factory=lambda: np.zeros(0, dtype=np.int64)
    )


class NameTotal(msgspec.Struct, frozen=True):
    """One operator or kernel name's calls within the steps: how many, their summed duration,
    and (operators) their summed self time, the time not spent in operators nested inside."""

    name: str
    count: int
    total_us: float
    self_us: float | None = None


class NameTotals(msgspec.Struct, frozen=True):
    """Every operator and kernel name with its calls in the steps, for `diff`: counted as HTA's
    TraceDiff counts an iteration's events (an operator by its start inside the host step, a
    kernel by the runtime call that launched it)."""

    steps: int
    """The steps these totals cover, to put them per step."""
    operators: tuple[NameTotal, ...] = ()
    kernels: tuple[NameTotal, ...] = ()


class RankAnalysis(msgspec.Struct, frozen=True):
    """Everything measured for one rank (one or several trace files of the same worker)."""

    rank: int | None
    label: str
    infos: tuple[TraceInfo, ...]
    devices: tuple[DeviceInfo, ...]
    steps: tuple[StepCost, ...]
    breakdown: dict[str, float]
    metrics: Metrics
    top_kernels: tuple[NamedTime, ...] = ()
    top_ops: tuple[NamedTime, ...] = ()
    copies: tuple[CopyStat, ...] = ()
    notes: tuple[str, ...] = msgspec.field(default_factory=tuple)
    python_calls: tuple[PythonCalls, ...] = ()
    """Each file's Python calls, for locating code fixes; () where the traces have none."""
    communication: tuple[CommStat, ...] = ()
    """Collectives by kind; () where the traces have none."""
    totals: NameTotals | None = None
    """Every operator and kernel name's calls in the steps; None where no trace was read."""
    memory: tuple[DeviceMemory, ...] = ()
    """Per device and rank, from `[memory]` events; () where the traces have none."""
    modules: ModuleTree | None = None
    """Time per `nn.Module`; None where the traces record no module calls."""
    efficiency: Efficiency | None = None
    """FLOPs, roofline and MFU; None where no operator recorded its shapes."""
