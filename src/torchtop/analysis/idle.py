"""Why the GPU idles: each idle gap put down to the host, to launch latency or to something else.

Counted the way Holistic Trace Analysis's `get_idle_time_breakdown` counts it, so the two agree on
the same trace. The device work is kernels, copies and memsets; the idle gap before one of them
runs from the end of the work before it to its start, and is

- `host_wait` when the runtime call that launched it began after that earlier work had ended:
  the device drained its queue and waited for the host to send more;
- `kernel_wait` otherwise, when the gap is under 30 µs (HTA's `consecutive_kernel_delay`, which
  it applies to microsecond timestamps): the latency of starting work already queued;
- `other` for the rest: queued work held back by something else, an event from another stream
  (a collective) or a synchronisation.

HTA counts gaps per CUDA stream (`stream_idle_us`, which tests hold against it). A step's share
(`idle_breakdown`) counts the device as idle only when none of its streams runs anything (gaps in
the union of its streams' work, so the shares add up to its idle time, not beyond), from the
steps' start to their end: the gap before the first work is classified the same way (the window's
start standing in for the work before), and the one after the last as `host_wait`, since any work
after it was launched only then. On a trace whose device work runs on one stream the two counts
agree between the first and the last work.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from torchtop.analysis.steps import StepWindows
from torchtop.analysis.vocabulary import distinct
from torchtop.traces.data import NO_ID, Floats, Ints, TraceData

KERNEL_WAIT_BELOW_US = 30.0
"""HTA's default `consecutive_kernel_delay` (documented as ns, compared with its µs `ts`)."""

CATEGORIES = ("host_wait", "kernel_wait", "other")


class DeviceWork(NamedTuple):
    """Every kernel, copy and memset with its stream, device and launch call's start (NaN where
    no runtime call carries its correlation id)."""

    start_us: Floats
    end_us: Floats
    stream: Ints
    device: Ints
    launch_us: Floats


def device_work(trace: TraceData) -> DeviceWork:
    parts = (trace.kernels, trace.copies.spans, trace.memsets)
    start = np.concatenate([p.start_us for p in parts])
    end = np.concatenate([p.end_us for p in parts])
    correlation = np.concatenate([p.correlation for p in parts])
    return DeviceWork(
        start,
        end,
        np.concatenate([p.thread for p in parts]),
        np.concatenate([p.device for p in parts]),
        _launch_start(trace, correlation),
    )


def _launch_start(trace: TraceData, correlation: Ints) -> Floats:
    runtime = trace.runtime
    launch = np.full(len(correlation), np.nan)
    if len(runtime) == 0 or len(correlation) == 0:
        return launch
    order = np.argsort(runtime.correlation, kind="stable")
    sorted_corr = runtime.correlation[order]
    position = np.searchsorted(sorted_corr, correlation, side="right") - 1
    found = (position >= 0) & (correlation != NO_ID)
    found[found] = sorted_corr[position[found]] == correlation[found]
    launch[found] = runtime.start_us[order[position[found]]]
    return launch


def idle_breakdown(trace: TraceData, steps: StepWindows) -> dict[str, float]:
    """The device's idle time within the steps, by cause, as shares of the steps' span (first
    step's start to last step's end, the span `gpu_utilization` is a share of); averaged over
    the devices that ran work. Empty where the trace has no device work in the steps."""
    if len(steps) == 0:
        return {}
    lo, hi = float(steps.start_us[0]), float(steps.end_us[-1])
    work = device_work(trace)
    inside = (work.end_us > lo) & (work.start_us < hi)
    if hi <= lo or not inside.any():
        return {}
    per_device = [
        _window_idle_us(
            np.maximum(work.start_us[mine], lo),
            np.minimum(work.end_us[mine], hi),
            work.launch_us[mine],
            lo,
            hi,
        )
        for device in distinct(work.device[inside]).tolist()
        for mine in [inside & (work.device == device)]
    ]
    mean = np.mean(per_device, axis=0) / (hi - lo)
    return dict(zip(CATEGORIES, mean.tolist(), strict=True))


def stream_idle_us(trace: TraceData, lo: float, hi: float) -> dict[str, dict[str, float]]:
    """HTA's own count: per stream (the trace's `tid` of its device work), the idle µs by cause
    between the first and the last of its work lying wholly within [lo, hi]."""
    work = device_work(trace)
    inside = (work.start_us >= lo) & (work.end_us <= hi)
    result = {}
    for stream in distinct(work.stream[inside]).tolist():
        mine = inside & (work.stream == stream)
        start, end = work.start_us[mine], work.end_us[mine]
        first, last = float(start.min()), float(end.max())
        idle = _window_idle_us(start, end, work.launch_us[mine], first, last)
        result[trace.threads[stream]] = dict(zip(CATEGORIES, idle.tolist(), strict=True))
    return result


def _window_idle_us(start: Floats, end: Floats, launch: Floats, lo: float, hi: float) -> Floats:
    """Idle µs by cause (in `CATEGORIES` order) between work spans in [lo, hi]: a gap's cause
    is read from the work that ends it; the gap after the last work is host wait."""
    order = np.argsort(start, kind="stable")
    start, end, launch = start[order], end[order], launch[order]
    # What ran before each span ended at the latest of the earlier ends: overlapping spans
    # (two streams, or clipped edges) leave no gap.
    before = np.maximum.accumulate(np.concatenate(([lo], end)))
    prev_end = before[:-1]
    gap = np.maximum(start - prev_end, 0.0)
    host = launch > prev_end  # False where the launch is unknown (NaN), as in HTA
    kernel = ~host & (gap < KERNEL_WAIT_BELOW_US)
    tail = max(hi - float(before[-1]), 0.0)
    return np.array(
        [
            float(gap[host].sum()) + tail,
            float(gap[kernel].sum()),
            float(gap[~host & ~kernel].sum()),
        ]
    )


def idle_metrics(trace: TraceData, steps: StepWindows) -> dict[str, float | None]:
    """`idle_breakdown` as the metrics rules name: `idle_host_wait_share` and so on; None each
    where the trace has no device work in its steps."""
    shares = idle_breakdown(trace, steps)
    return {f"idle_{category}_share": shares.get(category) for category in CATEGORIES}
