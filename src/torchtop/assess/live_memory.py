"""A process's memory as the agent measured it at each step end, in the shapes the traces'
memory takes (`DeviceMemory`), so the report, the dashboard and the out-of-memory line show
live figures as they show a trace's.

Per process: a `cuda:N` entry where the job used CUDA (the allocator's peak of each step, the
step of the highest, the capacity and the headroom, the batch-size prediction on the traces'
assumption: what was allocated as the peak's step began stays, the rest grows with the batch),
with NVML's reading of the same memory beside it; and a `host` entry, its resident set. A
CPU-only job has the `host` entry alone: no CUDA figure is made up. Pure.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

import numpy as np
from msgspec.structs import replace

from torchtop.analysis.memory import batch_factor_max, memory_curve
from torchtop.model.analysis import Metrics
from torchtop.model.memory import DeviceMemory
from torchtop.runs.records import GpuSample
from torchtop.runs.state import ProcessState, StepRecord


def live_memory(process: ProcessState) -> tuple[DeviceMemory, ...]:
    """The process's `cuda:N` entry (where it used CUDA), then its `host` entry (where read)."""
    found = []
    cuda = _cuda_entry(process)
    if cuda is not None:
        found.append(cuda)
    host = _host_entry(process)
    if host is not None:
        found.append(host)
    return tuple(found)


def _cuda_entry(process: ProcessState) -> DeviceMemory | None:
    tally = process.memory
    peak = tally.peak_allocated_bytes
    if peak is None:
        return None
    capacity = tally.capacity_bytes
    persistent = tally.persistent_bytes
    steps = [s for s in process.steps if s.cuda_peak_allocated_bytes is not None]
    return DeviceMemory(
        device=f"cuda:{tally.cuda_device if tally.cuda_device is not None else 0}",
        rank=process.rank,
        peak_allocated_bytes=float(peak),
        peak_reserved_bytes=_float(tally.peak_reserved_bytes),
        peak_step=tally.peak_step,
        peak_phase=None,
        capacity_bytes=capacity,
        persistent_bytes=_float(persistent),
        headroom_bytes=float(capacity - peak) if capacity else None,
        batch_factor_max=batch_factor_max(float(peak), _float(persistent), capacity),
        curve=_curve(steps, lambda s: s.cuda_peak_allocated_bytes, lambda s: s.cuda_reserved_bytes),
        source="agent",
        last_peak_bytes=_float(tally.last_peak_bytes),
    )


def _host_entry(process: ProcessState) -> DeviceMemory | None:
    tally = process.memory
    if tally.rss_peak_bytes is None:
        return None
    steps = [s for s in process.steps if s.rss_bytes is not None]
    return DeviceMemory(
        device="host",
        rank=process.rank,
        peak_allocated_bytes=float(tally.rss_peak_bytes),
        peak_reserved_bytes=None,
        peak_step=tally.rss_peak_step,
        peak_phase=None,
        capacity_bytes=None,
        persistent_bytes=None,
        headroom_bytes=None,
        batch_factor_max=None,
        curve=_curve(steps, lambda s: s.rss_bytes, lambda s: None),
        source="agent",
        last_peak_bytes=_float(tally.rss_last_bytes),
    )


def with_nvml(
    memory: tuple[DeviceMemory, ...], gpu: Iterable[GpuSample], pids: dict[int | None, int]
) -> tuple[DeviceMemory, ...]:
    """The agent's CUDA entries with NVML's reading of the same memory beside them."""
    samples = list(gpu)
    if not samples:
        return memory
    return tuple(
        replace(d, nvml_used_peak_bytes=nvml_used_peak(samples, pids[d.rank], _index(d.device)))
        if d.source == "agent" and d.device.startswith("cuda") and d.rank in pids
        else d
        for d in memory
    )


def _index(device: str) -> int:
    return int(device.partition(":")[2] or 0)


def nvml_used_peak(gpu: Iterable[GpuSample], pid: int, device: int) -> float | None:
    """The most NVML saw the process use (any device), else the device (same index) use."""
    mine: list[float] = []
    whole: list[float] = []
    for sample in gpu:
        mine += [
            float(p.memory_used_bytes)
            for p in sample.processes
            if p.pid == pid and p.memory_used_bytes is not None
        ]
        whole += [
            float(d.memory_used_bytes)
            for d in sample.devices
            if d.index == device and d.memory_used_bytes is not None
        ]
    found = mine or whole
    return max(found) if found else None


Figure = Callable[[StepRecord], int | None]


def _curve(
    steps: Sequence[StepRecord], allocated: Figure, reserved: Figure
) -> tuple[tuple[float, float, float | None], ...]:
    """(seconds since the first kept step ended, the figure, reserved or None) per step,
    down-sampled as a trace's curve is."""
    if not steps:
        return ()
    t0 = steps[0].t
    ts = np.array([(s.t - t0) * 1e6 for s in steps])
    values = np.array([float(allocated(s) or 0) for s in steps])
    kept = [reserved(s) for s in steps]
    held = np.array([float(r) if r is not None else np.nan for r in kept])
    return memory_curve(ts, values, held)


def live_memory_metrics(devices: Sequence[DeviceMemory]) -> Metrics:
    """`memory_peak_bytes`, `memory_peak_share` (the fullest CUDA device),
    `memory_batch_factor_max` (the tightest) and `rss_peak_bytes` (the largest process)."""
    metrics: Metrics = {}
    cuda = [d for d in devices if d.device.startswith("cuda") and d.source == "agent"]
    sized = [d for d in cuda if d.capacity_bytes]
    if cuda:
        fullest = max(cuda, key=lambda d: d.peak_allocated_bytes / (d.capacity_bytes or 1))
        metrics["memory_peak_bytes"] = fullest.peak_allocated_bytes
    if sized:
        metrics["memory_peak_share"] = max(
            d.peak_allocated_bytes / (d.capacity_bytes or 1) for d in sized
        )
    factors = [d.batch_factor_max for d in cuda if d.batch_factor_max is not None]
    if factors:
        metrics["memory_batch_factor_max"] = min(factors)
    hosts = [d.peak_allocated_bytes for d in devices if d.device == "host"]
    if hosts:
        metrics["rss_peak_bytes"] = max(hosts)
    return metrics


def _float(value: int | None) -> float | None:
    return float(value) if value is not None else None
