"""Host-side metrics: synchronisations, copies on the CPU, operator self time, parallelism style."""

from __future__ import annotations

import numpy as np

from torchtop.analysis.intervals import BLOCK, IntervalSet
from torchtop.analysis.steps import StepWindows
from torchtop.analysis.vocabulary import (
    COPY_OP_NAMES,
    SYNC_OP_NAMES,
    SYNC_RUNTIME_NAMES,
    codes_where,
    distinct,
)
from torchtop.model.analysis import Metrics, NamedTime
from torchtop.traces.data import Floats, Ints, Spans, TraceData
from torchtop.traces.heap import let_go

TOP_N = 10


def sync_metrics(trace: TraceData, steps: StepWindows) -> Metrics:
    """Host waits on the device: explicit synchronize calls and `.item()`-style scalar reads."""
    runtime_sync = np.isin(
        trace.runtime.name, codes_where(trace.names, SYNC_RUNTIME_NAMES.__contains__)
    )
    op_sync = np.isin(trace.ops.name, codes_where(trace.names, SYNC_OP_NAMES.__contains__))
    if not (len(trace.runtime) or len(trace.kernels)):
        return {}
    lo, hi = steps.start_us, steps.end_us
    busy = IntervalSet.of(
        np.concatenate([trace.runtime.start_us[runtime_sync], trace.ops.start_us[op_sync]]),
        np.concatenate([trace.runtime.end_us[runtime_sync], trace.ops.end_us[op_sync]]),
    )
    total = float((hi - lo).sum())
    calls = _count_within(trace.runtime.start_us[runtime_sync], lo, hi) + _count_within(
        _outermost_starts(trace.ops, op_sync), lo, hi
    )
    return {
        "syncs_per_step": calls / max(len(steps), 1),
        "sync_share": float(busy.covered_within(lo, hi).sum()) / total if total > 0 else None,
    }


def _count_within(points: Floats, lo: Floats, hi: Floats) -> float:
    inside = IntervalSet.of(lo.copy(), hi.copy()).contains(points)
    return float(inside.sum())


def _outermost_starts(spans: Spans, mask: np.ndarray) -> Floats:
    """Starts of the selected spans not nested in another selected span (item contains its read)."""
    selected = IntervalSet.of(spans.start_us, spans.end_us, mask)
    return selected.start


def cpu_metrics(trace: TraceData, steps: StepWindows) -> Metrics:
    """Shares of step time in copy-like operators and in any operator at all."""
    lo, hi = steps.start_us, steps.end_us
    total = float((hi - lo).sum())
    if total <= 0:
        return {}
    ops = trace.ops
    copy = np.isin(ops.name, codes_where(trace.names, COPY_OP_NAMES.__contains__))
    copy_busy = IntervalSet.of(ops.start_us, ops.end_us, copy)
    any_busy = IntervalSet.of(ops.start_us, ops.end_us)
    main_thread = _main_thread(trace, steps)
    main = ops.thread == main_thread
    main_busy = IntervalSet.of(ops.start_us, ops.end_us, main)
    return {
        "copy_op_share": float(copy_busy.covered_within(lo, hi).sum()) / total,
        "op_share": float(any_busy.covered_within(lo, hi).sum()) / total,
        "main_thread_op_share": float(main_busy.covered_within(lo, hi).sum()) / total,
        "threads_with_ops": len(distinct(ops.thread)),
    }


def _main_thread(trace: TraceData, steps: StepWindows) -> int:
    """The thread of the step markers, else the one with the most operator time."""
    if len(trace.steps):
        return int(trace.steps.thread[0])
    if len(trace.ops) == 0:
        return -1
    time_per_thread = np.bincount(trace.ops.thread, weights=trace.ops.dur_us)
    return int(np.argmax(time_per_thread))


def parallelism_metrics(trace: TraceData) -> Metrics:
    names = set(trace.names)
    backend = (trace.info.backend or "").lower()
    return {
        "uses_dp": "DataParallel.forward" in names,
        "uses_ddp": "DistributedDataParallel.forward" in names,
        "uses_nccl": backend == "nccl" or any(n.startswith("nccl:") for n in names),
        "uses_gloo": backend == "gloo" or any(n.startswith("gloo:") for n in names),
        "world_size": trace.info.world_size,
    }


def top_ops(trace: TraceData, self_us: Floats | None = None) -> tuple[NamedTime, ...]:
    """Operators ranked by self time (their time minus that of operators nested inside);
    `self_us`: the operators' `self_times`, where the caller has them already."""
    ops = trace.ops
    if len(ops) == 0:
        return ()
    if self_us is None:
        self_us = self_times(ops)
    sums = np.bincount(ops.name, weights=self_us, minlength=len(trace.names))
    counts = np.bincount(ops.name, minlength=len(trace.names))
    total = float(self_us.sum()) or 1.0
    best = np.argsort(sums)[::-1][:TOP_N]
    return tuple(
        NamedTime(trace.names[c], int(counts[c]), float(sums[c]), float(sums[c]) / total)
        for c in best.tolist()
        if sums[c] > 0
    )


def self_times(ops: Spans) -> Floats:
    """Each operator's time minus its direct children's, for properly nested ops per thread.

    Vectorised: threads are laid end to end on one time axis, each op's nesting depth is the
    number of ops that started before it minus those that ended by its start, and its parent is
    the last earlier op one level up. This is the analysis's biggest consumer of memory (a few
    arrays as long as the operators: 7.7M of them, 62 MB a float array, in a 10 GB trace), so
    positions are int32, arrays are reused in place and temporaries let go as soon as used."""
    if len(ops) == 0:
        return np.zeros(0)
    first_us = float(ops.start_us.min())
    span = float(ops.end_us.max() - first_us) + 1.0
    start = ops.thread.astype(np.float64)
    start *= span
    start -= first_us  # the thread's offset
    end = start + ops.end_us
    start += ops.start_us
    # Positions and parents fit int32 below 2**31 operators: half the memory, the same values.
    index_dtype = np.int32 if len(start) < 2**31 else np.int64
    # Sorted by start, the longer first; the ends negated in place for the key (exactly).
    order = np.lexsort((np.negative(end, out=end), start)).astype(index_dtype)
    let_go(len(order))  # the sort's own temporaries (`heap.let_go`); likewise below
    start = start[order]
    end = end[order]
    np.negative(end, out=end)
    ends_sorted = np.sort(end)
    let_go(len(order))
    duration = end
    duration -= start  # end - start, in place
    depth = np.empty(len(start), dtype=index_dtype)
    for first in range(0, len(start), BLOCK):
        block = slice(first, first + BLOCK)
        depth[block] = np.searchsorted(ends_sorted, start[block], side="right")
    del start, end, ends_sorted
    let_go(len(order))
    position: Ints = np.arange(len(duration), dtype=index_dtype)
    np.subtract(position, depth, out=depth)
    parent: Ints = np.full(len(duration), -1, dtype=index_dtype)
    for level in range(int(depth.max())):
        last_at_level = np.where(depth == level, position, -1)
        np.maximum.accumulate(last_at_level, out=last_at_level)
        below = depth == level + 1
        parent[below] = last_at_level[below]
        del last_at_level, below
    del depth, position
    let_go(len(order))
    # Bin 0 takes the ops without a parent: each parent's children are added in the same
    # order as over the ops that have one, so the sums are the same to the last bit.
    parent += 1
    child_time = np.bincount(parent, weights=duration, minlength=len(duration) + 1)
    del parent
    duration -= child_time[1:]
    del child_time
    np.maximum(duration, 0.0, out=duration)
    result = np.empty(len(duration))
    result[order] = duration
    return result
