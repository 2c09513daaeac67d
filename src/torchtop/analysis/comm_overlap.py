"""Communication against compute, per rank: how much was hidden, how much stalled the step.

A collective is hidden while other work runs beside it and exposed while nothing else does; only
the exposed part can be won back, so it bounds a communication fix's gain. On a GPU the
collective's time is its device kernels and the other work is the compute kernels, copies and
memsets; on a CPU job (gloo: no kernels at all) it is the host's collective ranges and the other
work the CPU operators. All-reduce is also set against the backward compute it could hide
behind: the work the host started from each step's first backward operator
(`autograd::engine::evaluate_function: ...`) on (on a GPU, the device work it launched then,
which runs up to a step later) that no all-reduce already overlaps. Exposed all-reduce below
that compute could in principle be hidden by overlapping better (bucket size); above it, no
overlap suffices and the volume must shrink (accumulating with `no_sync`, compression). Every
figure is a mean per step in ms, or a share of step time.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from torchtop.analysis.breakdown import Roles
from torchtop.analysis.comm_sizes import kernel_calls, launch_times, message_kind
from torchtop.analysis.comms import host_kind, kernel_kind
from torchtop.analysis.intervals import IntervalSet
from torchtop.analysis.vocabulary import distinct
from torchtop.model.analysis import Metrics
from torchtop.traces.data import Floats, Spans, TraceData

BACKWARD_PREFIX = "autograd::engine::evaluate_function"

NOT_MEASURED: Metrics = {
    "comm_time_ms": None,
    "comm_hidden_ms": None,
    "comm_exposed_ms": None,
    "comm_exposed_share": None,
    "allreduce_exposed_ms": None,
    "allreduce_exposed_share": None,
    "backward_compute_ms": None,
    "allreduce_exposed_vs_backward": None,
}


def overlap_metrics(trace: TraceData, roles: Roles, lo: Floats, hi: Floats) -> Metrics:
    """The metrics above for the steps [lo[i], hi[i]]; None where there is no communication."""
    on_device = len(trace.kernels) > 0
    comm = roles.comm_kernels if on_device else roles.sets["communication"]
    steps_us = float((hi - lo).sum())
    if len(comm) == 0 or len(lo) == 0 or steps_us <= 0:
        return dict(NOT_MEASURED)
    if on_device:
        busy = roles.compute_kernels.union(roles.sets["memcpy"]).union(roles.sets["memset"])
        all_reduce = _device_all_reduce(trace)
    else:
        busy = roles.sets["cpu_exec"]
        all_reduce = _named(trace.annotations, trace.names, host_kind)
    steps = len(lo)
    total = float(comm.covered_within(lo, hi).sum())
    exposed = float(comm.subtract(busy).covered_within(lo, hi).sum())
    reduce_exposed = float(all_reduce.subtract(busy).covered_within(lo, hi).sum())
    backward = _backward_compute_us(trace, busy, all_reduce, lo, hi)
    return {
        "comm_time_ms": total / steps / 1000.0,
        "comm_hidden_ms": (total - exposed) / steps / 1000.0,
        "comm_exposed_ms": exposed / steps / 1000.0,
        "comm_exposed_share": exposed / steps_us,
        "allreduce_exposed_ms": reduce_exposed / steps / 1000.0 if len(all_reduce) else None,
        "allreduce_exposed_share": reduce_exposed / steps_us if len(all_reduce) else None,
        "backward_compute_ms": None if backward is None else backward / steps / 1000.0,
        "allreduce_exposed_vs_backward": reduce_exposed / backward
        if backward and len(all_reduce)
        else None,
    }


def _named(spans: Spans, names: list[str], kind_of: Callable[[str], str | None]) -> IntervalSet:
    """The union of the spans whose name is an all-reduce."""
    codes = [int(c) for c in distinct(spans.name) if kind_of(names[int(c)]) == "all_reduce"]
    mask = np.isin(spans.name, codes)
    return IntervalSet.of(spans.start_us, spans.end_us, mask)


def _device_all_reduce(trace: TraceData) -> IntervalSet:
    """The all-reduce kernels: named so, or launched by an all-reduce call (RCCL's
    `ncclDevKernel_Generic` kernels say their kind only through the call)."""
    kernels = trace.kernels
    codes = {int(c): kernel_kind(trace.names[int(c)]) for c in distinct(kernels.name)}
    comm = np.isin(kernels.name, _comm_kernel_codes(trace))
    named = np.isin(kernels.name, [c for c, k in codes.items() if k == "all_reduce"])
    messages = trace.messages
    calls = kernel_calls(messages, trace, kernels.select(comm))
    kinds = np.array([message_kind(n) == "all_reduce" for n in messages.names], dtype=np.bool_)
    by_call = np.zeros(len(calls), dtype=np.bool_)
    mine = calls >= 0
    by_call[mine] = kinds[messages.collective[calls[mine]]]
    named[np.flatnonzero(comm)[by_call]] = True
    return IntervalSet.of(kernels.start_us, kernels.end_us, named)


def _backward_compute_us(
    trace: TraceData, busy: IntervalSet, all_reduce: IntervalSet, lo: Floats, hi: Floats
) -> float | None:
    """The backward pass's work that no all-reduce overlaps, inside the steps [lo, hi].

    Backward work is what runs from each host step's first backward operator to its end; on a
    GPU, the device work the host launched then (the device runs it later, by up to a step).
    None: no backward operator in any step (not a training trace)."""
    windows = _backward_windows(trace)
    if windows is None:
        return None
    if len(trace.kernels) == 0:
        backward = busy.intersect(windows)
    else:
        comm = np.isin(trace.kernels.name, _comm_kernel_codes(trace))
        parts = [trace.kernels.select(~comm), trace.copies.spans, trace.memsets]
        starts = np.concatenate([p.start_us for p in parts])
        ends = np.concatenate([p.end_us for p in parts])
        launched = np.concatenate([launch_times(trace, p) for p in parts])
        inside = np.isfinite(launched)
        inside[inside] = windows.contains(launched[inside])
        backward = IntervalSet.of(starts[inside], ends[inside])
    return float(backward.subtract(all_reduce).covered_within(lo, hi).sum())


def _backward_windows(trace: TraceData) -> IntervalSet | None:
    """From each host step's first backward operator to that step's end."""
    names = trace.names
    codes = [int(c) for c in distinct(trace.ops.name) if names[int(c)].startswith(BACKWARD_PREFIX)]
    starts = np.sort(trace.ops.start_us[np.isin(trace.ops.name, codes)])
    if len(starts) == 0:
        return None
    steps = trace.steps
    if len(steps):
        step_lo, step_hi = steps.start_us, steps.end_us
    else:
        step_lo, step_hi = np.array([starts[0]]), np.array([np.inf])
    first = np.searchsorted(starts, step_lo, side="left")
    found = first < len(starts)
    begin = starts[np.minimum(first, len(starts) - 1)]
    keep = found & (begin < step_hi)
    return IntervalSet.of(begin[keep], step_hi[keep]) if keep.any() else None


def _comm_kernel_codes(trace: TraceData) -> list[int]:
    return [int(c) for c in distinct(trace.kernels.name) if kernel_kind(trace.names[int(c)])]
