"""Device-side metrics: GPU utilisation, kernel launch overhead, Tensor Cores, copies, memory."""

from __future__ import annotations

import re

import numpy as np

from torchtop.analysis.intervals import IntervalSet
from torchtop.analysis.steps import StepWindows
from torchtop.analysis.vocabulary import (
    TENSOR_CORE_ELIGIBLE_OPS,
    codes_where,
    distinct,
    median,
    uses_tensor_cores,
)
from torchtop.model.analysis import CopyStat, Metrics, NamedTime
from torchtop.traces.data import COPY_KINDS, CUDA_DEVICE_TYPE, NO_ID, TraceData
from torchtop.traces.heap import let_go

TINY_KERNEL_US = 10.0
TOP_N = 10


def gpu_metrics(trace: TraceData, steps: StepWindows) -> Metrics:
    kernels = trace.kernels
    if len(kernels) == 0:
        return {"has_gpu": bool(len(trace.copies.spans) or len(trace.runtime))}
    lo, hi = float(steps.start_us[0]), float(steps.end_us[-1])
    span = hi - lo
    # One step at a time, each one's freed pages let go before the next (`heap.let_go`).
    in_steps = (kernels.start_us >= lo) & (kernels.end_us <= hi)
    in_steps_count = int(in_steps.sum())
    durations = kernels.dur_us[in_steps] if in_steps_count else kernels.dur_us
    del in_steps
    median_us = float(median(durations))
    tiny = float((durations < TINY_KERNEL_US).mean())
    del durations
    let_go(len(kernels))
    busy = _busy_per_device(trace, lo, hi) if span > 0 else []
    utilization = float(np.mean([b.total() / span for b in busy])) if busy else None
    gaps = _gaps_per_step(trace, busy, lo, hi, len(steps)) if span > 0 else None
    del busy
    let_go(len(kernels))
    delay_us = _launch_delay(trace)
    let_go(len(kernels))
    metrics: Metrics = {
        "has_gpu": True,
        "gpu_utilization": utilization,
        "gpu_idle_share": None if utilization is None else max(0.0, 1.0 - utilization),
        "gpu_count": len(distinct(kernels.device[kernels.device != NO_ID])) or 1,
        "kernels_per_step": float(in_steps_count) / max(len(steps), 1),
        "kernel_median_us": median_us,
        "tiny_kernel_fraction": tiny,
        "launch_delay_median_us": delay_us,
        "gpu_gaps_per_step": gaps,
    }
    metrics.update(_tensor_cores(trace))
    let_go(len(kernels))
    metrics.update(_compute_capability(trace))
    metrics.update(_memory(trace))
    return metrics


def _busy_per_device(trace: TraceData, lo: float, hi: float) -> list[IntervalSet]:
    """Each device's kernel busy time within the steps' span [lo, hi]: the GPU's utilization
    is their mean share of the span."""
    kernels = trace.kernels
    window = IntervalSet(np.array([lo]), np.array([hi]))
    return [
        IntervalSet.of(kernels.start_us, kernels.end_us, kernels.device == device).intersect(window)
        for device in distinct(kernels.device)
    ]


def _launch_delay(trace: TraceData) -> float | None:
    """Median time from the launching runtime call's start to the kernel's start."""
    kernels, runtime = trace.kernels, trace.runtime
    if len(runtime) == 0:
        return None
    order = np.argsort(runtime.correlation, kind="stable")
    sorted_corr = runtime.correlation[order]
    position = np.searchsorted(sorted_corr, kernels.correlation)
    position = np.minimum(position, len(sorted_corr) - 1)
    found = (sorted_corr[position] == kernels.correlation) & (kernels.correlation != NO_ID)
    if not found.any():
        return None
    delays = kernels.start_us[found] - runtime.start_us[order[position[found]]]
    return float(median(delays))


def _gaps_per_step(
    trace: TraceData, per_device: list[IntervalSet], lo: float, hi: float, step_count: int
) -> float:
    """Idle gaps between all devices' kernels within [lo, hi], per step; on one device its
    busy set (`per_device`) is that union already, made once."""
    if len(per_device) == 1:
        busy = per_device[0]
    else:
        busy = IntervalSet.of(trace.kernels.start_us, trace.kernels.end_us).intersect(
            IntervalSet(np.array([lo]), np.array([hi]))
        )
    return max(len(busy) - 1, 0) / max(step_count, 1)


def _tensor_cores(trace: TraceData) -> Metrics:
    kernels = trace.kernels
    total = float(kernels.dur_us.sum())
    if total <= 0:
        return {}
    tc_codes = codes_where(trace.names, uses_tensor_cores)
    tc_time = float(kernels.dur_us[np.isin(kernels.name, tc_codes)].sum())
    eligible_codes = codes_where(trace.names, TENSOR_CORE_ELIGIBLE_OPS.__contains__)
    eligible_ids = trace.ops.external_id[np.isin(trace.ops.name, eligible_codes)]
    eligible_ids = eligible_ids[eligible_ids != NO_ID]
    from_eligible = np.isin(kernels.external_id, eligible_ids) & (kernels.external_id != NO_ID)
    return {
        "tc_used_share": tc_time / total,
        "tc_eligible_share": float(kernels.dur_us[from_eligible].sum()) / total,
    }


def _compute_capability(trace: TraceData) -> Metrics:
    for device in trace.devices:
        if device.compute_major is not None:
            capability = device.compute_major + (device.compute_minor or 0) / 10
            return {
                "compute_capability": capability,
                "matrix_cores": _matrix_cores(device.name or "", capability),
            }
    return {}


_INSTINCT = re.compile(r"instinct\s*mi\s*(\d+)", re.IGNORECASE)


def _matrix_cores(name: str, capability: float) -> bool | None:
    """Whether the GPU has Tensor Cores (NVIDIA, compute capability 7.0 and later) or matrix
    cores (AMD Instinct MI100 and later: CDNA's MFMA units; MI50/MI60 have none). None for an
    AMD GPU the name does not place: ROCm reports gfx906 and gfx90a alike as 9.0."""
    lowered = name.lower()
    if "amd" in lowered or "radeon" in lowered or "instinct" in lowered:
        found = _INSTINCT.search(name)
        return None if found is None else int(found.group(1)) >= 100
    return capability >= 7


def _memory(trace: TraceData) -> Metrics:
    """Peak device memory allocated, over the device's capacity, from `[memory]` events."""
    memory = trace.memory
    if len(memory.ts_us) == 0:
        return {}
    best: Metrics = {}
    cuda = memory.device_type == CUDA_DEVICE_TYPE
    for device in distinct(memory.device[cuda]):
        mine = cuda & (memory.device == device)
        totals = memory.total_allocated[mine]
        if np.isfinite(totals).any():
            peak = float(np.nanmax(totals))
        else:
            order = np.argsort(memory.ts_us[mine], kind="stable")
            peak = float(np.cumsum(memory.bytes[mine][order]).max())
        capacity = next((d.total_memory_bytes for d in trace.devices if d.index == device), None)
        share = peak / capacity if capacity else None
        if share is not None and share >= float(best.get("memory_peak_share") or 0.0):
            best = {"memory_peak_bytes": peak, "memory_peak_share": share}
        elif not best:
            best = {"memory_peak_bytes": peak}
    return best


def top_kernels(trace: TraceData) -> tuple[NamedTime, ...]:
    kernels = trace.kernels
    if len(kernels) == 0:
        return ()
    total = float(kernels.dur_us.sum()) or 1.0
    sums = np.bincount(kernels.name, weights=kernels.dur_us, minlength=len(trace.names))
    counts = np.bincount(kernels.name, minlength=len(trace.names))
    best = np.argsort(sums)[::-1][:TOP_N]
    return tuple(
        NamedTime(
            name=trace.names[code],
            count=int(counts[code]),
            total_us=float(sums[code]),
            share=float(sums[code]) / total,
            tensor_cores=uses_tensor_cores(trace.names[code]),
        )
        for code in best.tolist()
        if sums[code] > 0
    )


def copy_stats(trace: TraceData) -> tuple[CopyStat, ...]:
    copies = trace.copies
    stats = []
    for kind in range(len(COPY_KINDS)):
        for pageable in (True, False):
            mine = (copies.kind == kind) & (copies.pageable == pageable)
            if not mine.any():
                continue
            seconds = float(copies.spans.dur_us[mine].sum()) / 1e6
            volume = float(np.nansum(copies.bytes[mine]))
            stats.append(
                CopyStat(
                    kind=COPY_KINDS[kind],
                    pageable=pageable,
                    count=int(mine.sum()),
                    bytes=volume,
                    total_us=seconds * 1e6,
                    gb_per_s=volume / seconds / 1e9 if seconds > 0 else None,
                )
            )
    return tuple(stats)


def copy_metrics(trace: TraceData, steps: StepWindows, step_total_us: float) -> Metrics:
    copies = trace.copies
    if len(copies.spans) == 0:
        return {}
    htod = copies.kind == 0
    pageable = copies.pageable
    steps_n = max(len(steps), 1)
    htod_seconds = float(copies.spans.dur_us[htod].sum()) / 1e6
    htod_bytes = float(np.nansum(copies.bytes[htod]))
    return {
        "htod_bytes_per_step": htod_bytes / steps_n,
        "htod_gb_per_s": htod_bytes / htod_seconds / 1e9 if htod_seconds > 0 else None,
        "pageable_copy_fraction": float(copies.spans.dur_us[pageable].sum())
        / max(float(copies.spans.dur_us.sum()), 1e-9),
        "pageable_htod_per_step": float((htod & pageable).sum()) / steps_n,
        "copy_time_share": float(copies.spans.dur_us.sum()) / step_total_us
        if step_total_us
        else None,
    }
