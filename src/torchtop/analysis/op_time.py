"""How long chosen operators took: their device work on a GPU, their own span on a CPU.

On a GPU an operator's time is the time of the kernels, copies and memsets it launched, not its
host span (the host runs ahead): each runtime call belongs to the chosen operator that encloses
it on its own thread, and each piece of device work to the runtime call with its correlation id.
The chosen operators must not nest on a thread (`analysis.efficiency` picks the innermost
modelled ones), so a launch belongs to one of them at most. Durations are summed, as
TraceLens's kernel time is for the one stream an operator's kernels run on in order.

On a CPU-only trace the work is the operator's own: its inclusive duration, children included,
as TraceLens times an operator without GPU events.
"""

from __future__ import annotations

import numpy as np

from torchtop.analysis.nesting import enclosing_top_level
from torchtop.traces.data import NO_ID, Floats, Ints, TraceData


def has_device_work(trace: TraceData) -> bool:
    return bool(len(trace.kernels) or len(trace.copies.spans) or len(trace.memsets))


def operator_time_us(trace: TraceData, chosen: Ints) -> Floats:
    """The time of each operator `chosen` (indices into `trace.ops`), in that order."""
    ops = trace.ops
    if not has_device_work(trace):
        return np.asarray(ops.end_us[chosen] - ops.start_us[chosen], dtype=np.float64)
    runtime = trace.runtime
    owner = enclosing_top_level(
        ops.start_us[chosen],
        ops.end_us[chosen],
        ops.thread[chosen],
        runtime.start_us,
        runtime.thread,
    )
    total = np.zeros(len(chosen), dtype=np.float64)
    for work in (trace.kernels, trace.copies.spans, trace.memsets):
        launcher = launchers(runtime.correlation, work.correlation)
        launched = launcher >= 0
        operator = owner[launcher[launched]]
        mine = operator >= 0
        durations = (work.end_us - work.start_us)[launched][mine]
        total += np.bincount(operator[mine], weights=durations, minlength=len(chosen))
    return total


def launchers(runtime_correlation: Ints, correlation: Ints) -> Ints:
    """The index of the runtime call with each correlation id, or -1."""
    result = np.full(len(correlation), -1, dtype=np.int64)
    if len(runtime_correlation) == 0 or len(correlation) == 0:
        return result
    order = np.argsort(runtime_correlation, kind="stable")
    ordered = runtime_correlation[order]
    position = np.searchsorted(ordered, correlation, side="right") - 1
    found = (position >= 0) & (correlation != NO_ID)
    found[found] = ordered[position[found]] == correlation[found]
    result[found] = order[position[found]]
    return result
