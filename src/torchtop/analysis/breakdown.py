"""The step-time breakdown, counted the way torch-tb-profiler counts it.

Each moment of a step goes to exactly one category, the first in priority order that is busy
then: Kernel > Memcpy > Memset > Communication > Runtime > DataLoader > CPU Exec, and Other for
moments when none is. So the parts add up to the step. Categories are unions of intervals:
- kernel: GPU kernels that are not collectives;
- memcpy, memset: device copies and fills; on a CPU-only trace, where there are no device
  copies, the copy-like operators (`copy_`, `to`, `contiguous`, `clone`) outside DataLoader and
  collective spans, so a CPU job's conversions show as copies rather than as math;
- communication: collective kernels (NCCL/RCCL), the host's `nccl:`/`gloo:` ranges, and on a
  CPU-only trace the c10d collectives themselves;
- runtime: CUDA/HIP runtime and driver calls;
- dataloader: `enumerate(DataLoader)#...__next__` (operator or user annotation);
- cpu_exec: every other CPU operator.
"""

from __future__ import annotations

import msgspec
import numpy as np

from torchtop.analysis.intervals import Floats, IntervalSet
from torchtop.analysis.steps import StepWindows
from torchtop.analysis.vocabulary import (
    COPY_OP_NAMES,
    is_collective_annotation,
    is_comm_kernel,
    is_cpu_collective,
    is_dataloader,
    mask_names,
)
from torchtop.traces.data import Spans, TraceData

CATEGORIES = (
    "kernel",
    "memcpy",
    "memset",
    "communication",
    "runtime",
    "dataloader",
    "cpu_exec",
    "other",
)


class Roles(msgspec.Struct, frozen=True):
    """Each category's busy time as an interval set, before priorities apply."""

    sets: dict[str, IntervalSet]
    comm_kernels: IntervalSet
    compute_kernels: IntervalSet


def role_sets(trace: TraceData) -> Roles:
    names = trace.names
    cpu_only = len(trace.kernels) == 0
    comm_kernel = mask_names(trace.kernels.name, names, is_comm_kernel)
    comm_op_test = is_cpu_collective if cpu_only else is_collective_annotation
    ops, annotations = trace.ops, trace.annotations
    op_dl = mask_names(ops.name, names, is_dataloader)
    op_comm = mask_names(ops.name, names, comm_op_test) & ~op_dl
    ann_dl = mask_names(annotations.name, names, is_dataloader)
    ann_comm = mask_names(annotations.name, names, comm_op_test) & ~ann_dl
    compute = _set(trace.kernels, ~comm_kernel)
    comm = IntervalSet.of(
        np.concatenate(
            [
                trace.kernels.start_us[comm_kernel],
                ops.start_us[op_comm],
                annotations.start_us[ann_comm],
            ]
        ),
        np.concatenate(
            [trace.kernels.end_us[comm_kernel], ops.end_us[op_comm], annotations.end_us[ann_comm]]
        ),
    )
    dataloader = _set(ops, op_dl).union(_set(annotations, ann_dl))
    copies = _set(trace.copies.spans)
    if cpu_only:
        copies = _set(ops, mask_names(ops.name, names, COPY_OP_NAMES.__contains__))
        copies = copies.subtract(dataloader).subtract(comm)
    sets = {
        "kernel": compute,
        "memcpy": copies,
        "memset": _set(trace.memsets),
        "communication": comm,
        "runtime": _set(trace.runtime),
        "dataloader": dataloader,
        "cpu_exec": _set(ops, ~op_dl & ~op_comm),
    }
    return Roles(sets, comm_kernels=_set(trace.kernels, comm_kernel), compute_kernels=compute)


def _set(spans: Spans, mask: np.ndarray | None = None) -> IntervalSet:
    if mask is None:
        return IntervalSet.of(spans.start_us, spans.end_us)
    return IntervalSet.of(spans.start_us[mask], spans.end_us[mask])


class StepCosts(msgspec.Struct, frozen=True):
    """Microseconds per category for each step: `costs[category][i]` for step i."""

    total_us: Floats
    costs: dict[str, Floats]

    def share(self, category: str) -> float:
        """Mean over steps of the category's time, over mean step time (as tb-profiler averages)."""
        total = float(self.total_us.mean()) if len(self.total_us) else 0.0
        return float(self.costs[category].mean()) / total if total > 0 else 0.0


def step_costs(roles: Roles, steps: StepWindows) -> StepCosts:
    lo, hi = steps.start_us, steps.end_us
    free = IntervalSet.of(lo.copy(), hi.copy())
    costs: dict[str, Floats] = {}
    for category in CATEGORIES[:-1]:
        taken = free.intersect(roles.sets[category])
        costs[category] = taken.covered_within(lo, hi)
        free = free.subtract(taken)
    costs["other"] = free.covered_within(lo, hi)
    return StepCosts(total_us=hi - lo, costs=costs)
