"""What a trace says about memory and about `nn.Module`s: per device, the allocator's peak and
where in the step it falls, who allocated; per module, forward and backward time as a tree."""

from __future__ import annotations

import msgspec

HOW_TO_RECORD = (
    "modules: the trace has no module calls; profile with "
    "torch.profiler.profile(with_stack=True) to see time per nn.Module"
)

PHASES = ("forward", "backward", "optimizer", "other")
"""Where in a step an instant falls: before the step's first backward operator (forward,
data loading included), between its first and last (backward), inside an `Optimizer.*` range
(optimizer), or after backward outside the optimizer (other)."""


class Allocator(msgspec.Struct, frozen=True):
    """The allocations made under one top-level operator (its children's included, as
    torch-tb-profiler's "Allocation Count/Size" count them)."""

    name: str
    count: int
    bytes: float
    alive_at_peak_bytes: float
    """Of those bytes, what was still allocated at the device's peak."""


class MemoryStep(msgspec.Struct, frozen=True):
    number: int
    peak_allocated_bytes: float
    phase: str
    """Where the step's peak falls (`PHASES`)."""
    peak_into_step_share: float
    """How far into the step the peak falls, 0 (its start) to 1 (its end)."""


class DeviceMemory(msgspec.Struct, frozen=True):
    """One device (or the CPU) of one rank, from `[memory]` events (`profile_memory=True`)."""

    device: str
    """`cpu` or `cuda:N`; `host` for the process's resident set (`source` `agent`)."""
    rank: int | None
    peak_allocated_bytes: float
    peak_reserved_bytes: float | None
    """None where the trace does not record the reserved total."""
    peak_step: int | None
    peak_phase: str | None
    """None where the trace has no steps around the peak."""
    capacity_bytes: int | None
    """The device's memory (`deviceProperties.totalGlobalMem`); None for the CPU or unknown."""
    persistent_bytes: float | None
    """Allocated at the least in the peak's step: weights, gradients, optimizer state."""
    headroom_bytes: float | None
    """Capacity minus the peak allocated."""
    batch_factor_max: float | None
    """The largest multiple of the current batch predicted to fit, assuming what grows with
    the batch is the peak minus `persistent_bytes` (activations) and the rest does not."""
    steps: tuple[MemoryStep, ...] = ()
    top_allocators: tuple[Allocator, ...] = ()
    curve: tuple[tuple[float, float, float | None], ...] = ()
    """(seconds into the trace, allocated bytes, reserved bytes): the highest point of each of
    at most `CURVE_POINTS` equal slices of the trace, so peaks survive the down-sampling."""
    source: str = "trace"
    """`trace` (`[memory]` events), or `agent` (the agent's reading at each step end: the
    allocator's peak of each step on a CUDA device; the resident set on the `host`)."""
    last_peak_bytes: float | None = None
    """The newest step's peak (`agent` only): the last measured before the process ended."""
    nvml_used_peak_bytes: float | None = None
    """The most device memory NVML saw the process (else the device) use while it ran
    (`nvidia-smi --query-compute-apps=used_memory`): the allocator's view plus CUDA's own."""


class ModuleTime(msgspec.Struct, frozen=True):
    """One `nn.Module` at one place in the model (`Linear_0` under `Sequential_0`): its time
    per step, its own (self) and with its children's (total)."""

    name: str
    calls: int
    forward_ms: float
    forward_self_ms: float
    backward_ms: float | None
    """None where the trace recorded no backward pass."""
    backward_self_ms: float | None
    children: tuple[ModuleTime, ...] = ()


class ModuleTree(msgspec.Struct, frozen=True):
    """The modules of one rank's trace: the roots of the tree, per-step means over `steps`."""

    steps: int
    roots: tuple[ModuleTime, ...]
    source: str = "trace"
    """`trace` (a trace's module calls), or `agent` (the agent's forward hooks, on request:
    forward only, each call's wall time on the host; `backward_ms` is None)."""
    first_step: int | None = None
    """`agent`: the first of the `steps` steps timed."""
    device: str | None = None
    """`agent`: the device the job used (`cpu`, `cuda:N`): on CUDA the times are host time,
    the forward's launches, not its kernels."""


class OutOfMemory(msgspec.Struct, frozen=True):
    """A job that died of out-of-memory: PyTorch's words, the device, and the last peak the
    traces measured on it (with the operators holding it)."""

    message: str
    device: str | None
    """`cuda:N` or `cpu`; None where neither the message nor the traces name one."""
    last_peak_bytes: float | None
    top_allocators: tuple[Allocator, ...] = ()
    last_peak_of: str | None = None
    """What the last peak counts: `allocated` (the allocator's bytes) or `resident set` (the
    process's RSS, for a CPU job measured live); None where no peak was measured."""
