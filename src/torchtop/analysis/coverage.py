"""How much of the device's work the efficiency's FLOPs cover, and what the rest is.

MFU counts the FLOPs of the operators `op_cost` models, so where most of the device time went
to operators it could not cost, MFU is far below the truth: a 2021 ResNet-50 trace records no
"Concrete Inputs", a convolution's stride and padding are unknown, and its FLOPs (most of the
model's) go uncounted. The share answers "how far can I trust MFU".

The denominator is all device work (kernels, copies, memsets) launched in the counted steps:
the modelled operators' own (their rows' time, which `op_time` counts by the same launches) plus
every other launch whose runtime call starts in a kept step. Collectives' kernels (NCCL, RCCL)
are left out of it: they do no model FLOPs, and a data-parallel job's all-reduce would
otherwise read as work whose FLOPs went uncounted. Device time rather than host spans, because
the device is what MFU measures; a CPU-only trace has no share. Each launch not
modelled is named by the innermost operator around its runtime call, with the reason its FLOPs
are missing.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from torchtop.analysis.intervals import IntervalSet
from torchtop.analysis.nesting import enclosing_top_level, innermost
from torchtop.analysis.op_cost import modelled_operators, op_cost
from torchtop.analysis.op_time import launchers
from torchtop.analysis.steps import StepWindows, host_steps
from torchtop.analysis.vocabulary import codes_where, is_comm_kernel
from torchtop.model.efficiency import Unmodelled
from torchtop.traces.data import NO_ID, Floats, Ints, TraceData
from torchtop.traces.shapes import decoded

FLOOR_SHARE = 0.5
"""Under this share of the device time modelled, MFU is reported as a lower bound only."""
NO_OPERATOR = "(no operator)"


def unmodelled_work(trace: TraceData, steps: StepWindows, counted: Ints) -> list[Unmodelled]:
    """The device time launched in the kept steps outside the `counted` operators (indices into
    `trace.ops`, not nesting on a thread), by innermost operator and reason, the longest first."""
    ops, runtime = trace.ops, trace.runtime
    step_start, step_end, _, _ = host_steps(trace)
    in_steps = IntervalSet(step_start[: len(steps)], step_end[: len(steps)]).contains(
        runtime.start_us
    )
    owned = enclosing_top_level(
        ops.start_us[counted], ops.end_us[counted], ops.thread[counted],
        runtime.start_us, runtime.thread,
    ) >= 0  # fmt: skip
    per_call = _device_time_per_call(trace)
    calls = np.flatnonzero(in_steps & ~owned & (per_call > 0))
    owner = innermost(ops.start_us, ops.end_us, ops.thread, runtime.start_us[calls],
                      runtime.thread[calls])  # fmt: skip
    totals: dict[tuple[str, str], float] = {}
    reasons: dict[int, tuple[str, str]] = {}
    for op, time_us in zip(owner.tolist(), per_call[calls].tolist(), strict=True):
        if op not in reasons:
            reasons[op] = _why(trace, op)
        totals[reasons[op]] = totals.get(reasons[op], 0.0) + time_us
    return sorted_unmodelled(totals)


def _device_time_per_call(trace: TraceData) -> Floats:
    """The µs of device work each runtime call launched, collectives' kernels left out."""
    runtime = trace.runtime
    per_call = np.zeros(len(runtime), dtype=np.float64)
    comm = codes_where(trace.names, is_comm_kernel)
    for work in (trace.kernels, trace.copies.spans, trace.memsets):
        launcher = launchers(runtime.correlation, work.correlation)
        found = launcher >= 0
        if work is trace.kernels:
            found &= ~np.isin(work.name, comm)
        per_call += np.bincount(
            launcher[found], weights=(work.end_us - work.start_us)[found], minlength=len(runtime)
        )
    return per_call


def sorted_unmodelled(totals: dict[tuple[str, str], float]) -> list[Unmodelled]:
    rows = [Unmodelled(name, reason, time_us) for (name, reason), time_us in totals.items()]
    return sorted(rows, key=lambda r: (-r.time_us, r.name, r.reason))


def pooled_unmodelled(parts: Sequence[Sequence[Unmodelled]]) -> list[Unmodelled]:
    totals: dict[tuple[str, str], float] = {}
    for part in parts:
        for row in part:
            totals[row.name, row.reason] = totals.get((row.name, row.reason), 0.0) + row.time_us
    return sorted_unmodelled(totals)


def modelled_share(modelled_us: float, unmodelled: Sequence[Unmodelled]) -> float | None:
    total = modelled_us + sum(row.time_us for row in unmodelled)
    return modelled_us / total if total > 0 else None


def _why(trace: TraceData, op: int) -> tuple[str, str]:
    """The operator's name and why its FLOPs are not in the efficiency's."""
    if op < 0:
        return NO_OPERATOR, "launched outside any operator"
    name = trace.names[trace.ops.name[op]]
    if name not in modelled_operators():
        return name, "not a modelled operator"
    shape = trace.op_shape[op]
    if shape == NO_ID:
        return name, "no shapes recorded"
    dims, types, concrete = decoded(trace.shapes[shape])
    if op_cost(name, dims, types, concrete) is not None:
        return name, "outside the modelled operator inside it"
    return name, "arguments not modelled" if concrete else "no Concrete Inputs recorded"
