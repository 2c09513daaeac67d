"""Every operator and kernel name with its calls in a trace's steps: what `diff` compares.

Counted the way Holistic Trace Analysis's `TraceDiff` counts an iteration's events, so the two
agree on the same pair of traces: an operator belongs to the host step (`ProfilerStep#N`) its
start falls in, a kernel to the step of the runtime call that launched it (by correlation id).
Only the steps the analysis kept count (a trailing step whose device work was cut off is left
out), so the totals put per step are per the steps the report counts.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from torchtop.analysis.host import self_times
from torchtop.analysis.intervals import IntervalSet
from torchtop.analysis.steps import StepWindows, host_steps
from torchtop.model.analysis import NameTotal, NameTotals
from torchtop.traces.data import NO_ID, Floats, Ints, TraceData
from torchtop.traces.heap import let_go


def name_totals(trace: TraceData, steps: StepWindows, self_us: Floats | None = None) -> NameTotals:
    """The operators' and kernels' counts and summed durations within the kept steps;
    `self_us`: the operators' `self_times`, where the caller has them already."""
    start, end, _, _ = host_steps(trace)
    start, end = start[: len(steps)], end[: len(steps)]
    ops = trace.ops
    counted = IntervalSet(start, end).contains(ops.start_us)  # as `_step_of(...) >= 0`
    # No copies of a big trace's columns where every operator counts.
    in_step: npt.NDArray[np.bool_] | slice = slice(None) if counted.all() else counted
    del counted
    if self_us is None:
        self_us = self_times(ops)
    self_us = self_us[in_step]
    durations = np.subtract(ops.end_us[in_step], ops.start_us[in_step])
    operators = _by_name(trace.names, ops.name[in_step], durations, self_us)
    del durations, self_us
    let_go(len(ops))  # `heap.let_go`
    launched = _launch_step(trace, start, end) >= 0
    kernels = trace.kernels
    kernel_us = kernels.end_us[launched] - kernels.start_us[launched]
    return NameTotals(
        steps=len(steps),
        operators=operators,
        kernels=_by_name(trace.names, kernels.name[launched], kernel_us, None),
    )


def _step_of(points: Floats, start: Floats, end: Floats) -> Ints:
    """The index of the step each point falls in (start <= t < end), else -1."""
    index = np.searchsorted(start, points, side="right") - 1
    inside = index >= 0
    inside[inside] = points[inside] < end[index[inside]]
    return np.where(inside, index, -1)


def _launch_step(trace: TraceData, start: Floats, end: Floats) -> Ints:
    """Each kernel's step: that of the runtime call with its correlation id, else -1."""
    runtime = trace.runtime
    runtime_step = _step_of(runtime.start_us, start, end)
    order = np.argsort(runtime.correlation, kind="stable")
    sorted_corr = runtime.correlation[order]
    correlation = trace.kernels.correlation
    position = np.searchsorted(sorted_corr, correlation, side="right") - 1
    found = (position >= 0) & (correlation != NO_ID)
    found[found] = sorted_corr[position[found]] == correlation[found]
    step = np.full(len(correlation), -1, dtype=np.int64)
    step[found] = runtime_step[order[position[found]]]
    return step


def _by_name(
    names: list[str], codes: Ints, durations_us: Floats, self_us: Floats | None
) -> tuple[NameTotal, ...]:
    """One entry per name seen, the longest total first."""
    if len(codes) == 0:
        return ()
    counts = np.bincount(codes, minlength=len(names))
    sums = np.bincount(codes, weights=durations_us, minlength=len(names))
    selfs = None if self_us is None else np.bincount(codes, weights=self_us, minlength=len(names))
    seen = np.flatnonzero(counts)
    seen = seen[np.argsort(-sums[seen], kind="stable")]
    return tuple(
        NameTotal(
            name=names[code],
            count=int(counts[code]),
            total_us=float(sums[code]),
            self_us=None if selfs is None else float(selfs[code]),
        )
        for code in seen.tolist()
    )


def pooled(parts: list[NameTotals | None]) -> NameTotals | None:
    """Several files of one rank (spans of one worker): their steps and calls added up."""
    present = [p for p in parts if p is not None]
    if not present:
        return None
    return NameTotals(
        steps=sum(p.steps for p in present),
        operators=_added([p.operators for p in present]),
        kernels=_added([p.kernels for p in present]),
    )


def _added(tables: list[tuple[NameTotal, ...]]) -> tuple[NameTotal, ...]:
    merged: dict[str, NameTotal] = {}
    for table in tables:
        for item in table:
            old = merged.get(item.name)
            if old is None:
                merged[item.name] = item
                continue
            self_us = None if item.self_us is None else (old.self_us or 0.0) + item.self_us
            merged[item.name] = NameTotal(
                item.name, old.count + item.count, old.total_us + item.total_us, self_us
            )
    return tuple(sorted(merged.values(), key=lambda t: -t.total_us))
