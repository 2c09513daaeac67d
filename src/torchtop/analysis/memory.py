"""Memory per device from `[memory]` events: the peak, where in the step it falls, who
allocated, the curve, and the headroom a larger batch has.

Counted as torch-tb-profiler counts (its `memory_parser.py`, `run.py`): a device's peak is the
highest `Total Allocated` written; an allocation belongs to the operator that encloses it on the
thread that asked (here the top-level one, children included, as its "Allocation Size" with
children); a free is paired with its allocation by address. The batch prediction assumes what
grows with the batch is the step's peak minus the least allocated in that step (activations),
while weights, gradients and optimizer state (the least) do not.
"""

from __future__ import annotations

import numpy as np

from torchtop.analysis.nesting import enclosing_top_level
from torchtop.analysis.phases import step_phases
from torchtop.analysis.steps import StepWindows
from torchtop.analysis.vocabulary import distinct
from torchtop.model.memory import Allocator, DeviceMemory, MemoryStep
from torchtop.traces.data import CUDA_DEVICE_TYPE, Floats, Ints, MemoryTrack, TraceData

TOP_ALLOCATORS = 10
CURVE_POINTS = 120
OUTSIDE = "(outside any operator)"


def memory_profile(trace: TraceData, steps: StepWindows) -> tuple[DeviceMemory, ...]:
    """One entry per device that has `[memory]` events with totals; () where none."""
    memory = trace.memory
    if not np.isfinite(memory.total_allocated).any():
        return ()  # no events, or none with the allocator's total (before PyTorch 1.10)
    owner = _owners(trace)
    keys = memory.device_type * 1_000_003 + memory.device
    devices = []
    for key in distinct(keys).tolist():
        mine = np.flatnonzero(keys == key)
        mine = mine[np.argsort(memory.ts_us[mine], kind="stable")]
        found = _device(trace, mine, owner, steps)
        if found is not None:
            devices.append(found)
    return tuple(devices)


def _owners(trace: TraceData) -> Ints:
    """For each memory event, the top-level operator of its thread that encloses it, or -1."""
    ops, memory = trace.ops, trace.memory
    return enclosing_top_level(ops.start_us, ops.end_us, ops.thread, memory.ts_us, memory.thread)


def _device(trace: TraceData, mine: Ints, owner: Ints, steps: StepWindows) -> DeviceMemory | None:
    memory = trace.memory
    mine = _with_totals(memory, mine)
    if len(mine) == 0:
        return None
    allocated, ts = memory.total_allocated[mine], memory.ts_us[mine]
    peak = int(np.argmax(allocated))
    device_type, index = int(memory.device_type[mine[0]]), int(memory.device[mine[0]])
    per_step = _steps(ts, allocated, steps, step_phases(trace, steps))
    peak_step = next((s for s in per_step if s.peak_allocated_bytes == allocated[peak]), None)
    least = _least_in_step(ts, allocated, steps, peak_step)
    capacity = _capacity(trace, device_type, index)
    reserved = memory.total_reserved[mine]
    return DeviceMemory(
        device=f"cuda:{index}" if device_type == CUDA_DEVICE_TYPE else "cpu",
        rank=trace.info.rank,
        peak_allocated_bytes=float(allocated[peak]),
        peak_reserved_bytes=_peak_reserved(reserved, device_type),
        peak_step=peak_step.number if peak_step else None,
        peak_phase=peak_step.phase if peak_step else None,
        capacity_bytes=capacity,
        persistent_bytes=least,
        headroom_bytes=capacity - float(allocated[peak]) if capacity else None,
        batch_factor_max=batch_factor_max(float(allocated[peak]), least, capacity),
        steps=per_step,
        top_allocators=_allocators(trace, mine, owner[mine], peak),
        curve=memory_curve(ts, allocated, memory.total_reserved[mine]),
    )


def _with_totals(memory: MemoryTrack, mine: Ints) -> Ints:
    """The events that wrote the allocator's total: torch-tb-profiler reads no peak from
    events without one (traces before PyTorch 1.10), and neither does this."""
    return mine[np.isfinite(memory.total_allocated[mine])]


def _peak_reserved(reserved: Floats, device_type: int) -> float | None:
    """None for the CPU (Kineto writes 0: its allocator reserves nothing) or when unwritten."""
    if device_type != CUDA_DEVICE_TYPE or not np.isfinite(reserved).any():
        return None
    return float(np.nanmax(reserved))


def _capacity(trace: TraceData, device_type: int, index: int) -> int | None:
    if device_type != CUDA_DEVICE_TYPE:
        return None
    return next((d.total_memory_bytes for d in trace.devices if d.index == index), None)


def batch_factor_max(peak: float, least: float | None, capacity: int | None) -> float | None:
    """How many times the current batch is predicted to fit: `least` stays, the rest grows."""
    if capacity is None or least is None or peak <= least:
        return None
    return max(0.0, (capacity - least) / (peak - least))


def _steps(
    ts: Floats, allocated: Floats, steps: StepWindows, phases: list[Floats]
) -> tuple[MemoryStep, ...]:
    found = []
    for i, number in enumerate(steps.numbers):
        lo, hi = float(steps.start_us[i]), float(steps.end_us[i])
        inside = np.flatnonzero((ts >= lo) & (ts < hi))
        if len(inside) == 0:
            continue
        at = int(inside[np.argmax(allocated[inside])])
        found.append(
            MemoryStep(
                number=number,
                peak_allocated_bytes=float(allocated[at]),
                phase=phase_of(float(ts[at]), phases[i]),
                peak_into_step_share=(float(ts[at]) - lo) / (hi - lo) if hi > lo else 0.0,
            )
        )
    return tuple(found)


def phase_of(at_us: float, bounds: Floats) -> str:
    """`bounds`: the step's (backward start, backward end) and its optimizer ranges' starts
    and ends after them, as `phases.step_phases` gives them."""
    optimizer = bounds[2:].reshape(-1, 2)
    if ((optimizer[:, 0] <= at_us) & (at_us < optimizer[:, 1])).any():
        return "optimizer"
    backward_start, backward_end = float(bounds[0]), float(bounds[1])
    if not np.isfinite(backward_start) or at_us < backward_start:
        return "forward"
    return "backward" if at_us <= backward_end else "other"


def _least_in_step(
    ts: Floats, allocated: Floats, steps: StepWindows, step: MemoryStep | None
) -> float | None:
    if step is None:
        return None
    i = steps.numbers.index(step.number)
    inside = (ts >= steps.start_us[i]) & (ts < steps.end_us[i])
    return float(allocated[inside].min())


def _allocators(trace: TraceData, mine: Ints, owner: Ints, peak: int) -> tuple[Allocator, ...]:
    memory = trace.memory
    size = memory.bytes[mine]
    alive = _alive_at(memory.address[mine], size, peak)
    allocation = size > 0
    names = np.where(owner >= 0, trace.ops.name[np.maximum(owner, 0)], -1)[allocation]
    size, alive = size[allocation], alive[allocation]
    table = []
    for code in distinct(names).tolist():
        of = names == code
        table.append(
            Allocator(
                name=trace.names[code] if code >= 0 else OUTSIDE,
                count=int(of.sum()),
                bytes=float(size[of].sum()),
                alive_at_peak_bytes=float(size[of & alive].sum()),
            )
        )
    table.sort(key=lambda a: (-a.alive_at_peak_bytes, -a.bytes, a.name))
    return tuple(table[:TOP_ALLOCATORS])


def _alive_at(address: Ints, size: Floats, at: int) -> np.ndarray:
    """Which events (in time order) are allocations made by event `at` and not yet freed."""
    count = len(address)
    order = np.lexsort((np.arange(count), address))
    next_event = np.full(count, count, dtype=np.int64)
    same = address[order[1:]] == address[order[:-1]]
    next_event[order[:-1][same]] = order[1:][same]
    freed_by = np.where(next_event < count, size[np.minimum(next_event, count - 1)] < 0, False)
    freed_at = np.where(freed_by, next_event, count)
    made = np.arange(count) <= at
    return made & (size > 0) & (freed_at > at) & (address >= 0)


def memory_curve(
    ts: Floats, allocated: Floats, reserved: Floats
) -> tuple[tuple[float, float, float | None], ...]:
    """The highest point of each of `CURVE_POINTS` slices of the events (all, when fewer)."""
    points = np.arange(len(ts))
    if len(ts) > CURVE_POINTS:
        slices = np.array_split(points, CURVE_POINTS)
        points = np.array([s[np.argmax(allocated[s])] for s in slices])
    return tuple(
        (
            round(float(ts[i]) / 1e6, 6),
            float(allocated[i]),
            float(reserved[i]) if np.isfinite(reserved[i]) else None,
        )
        for i in points.tolist()
    )


def pooled_memory(devices: list[DeviceMemory]) -> tuple[DeviceMemory, ...]:
    """Several files of one rank: per device, the file whose peak is the highest."""
    best: dict[str, DeviceMemory] = {}
    for entry in devices:
        held = best.get(entry.device)
        if held is None or entry.peak_allocated_bytes > held.peak_allocated_bytes:
            best[entry.device] = entry
    return tuple(best.values())


def memory_metrics(devices: tuple[DeviceMemory, ...]) -> dict[str, float | None]:
    """`memory_batch_factor_max`: the tightest device's prediction; {} where none is made."""
    factors = [d.batch_factor_max for d in devices if d.batch_factor_max is not None]
    return {"memory_batch_factor_max": min(factors)} if factors else {}
