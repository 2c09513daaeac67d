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
- runtime: CUDA/HIP runtime calls (`cuda_runtime`; driver calls such as `cuLaunchKernel` are
  not, as torch-tb-profiler leaves them out: their time is their operator's, or Other);
- dataloader: `enumerate(DataLoader)#...__next__` (operator or user annotation);
- cpu_exec: every other CPU operator, and every other `record_function`/user-annotation range,
  so host time inside a range no operator covers is CPU Exec, as torch-tb-profiler's source
  counts it.

Two deliberate differences from torch-tb-profiler (`Accounting`): collectives are
communication by their names (a kernel by its own, a host range by its library's prefix;
tb_plugin: only host ranges of ten names, and the kernels whose external id links them to one),
and copy operators on a CPU-only trace are memcpy (tb_plugin: CPU Exec).
`TB_PLUGIN` turns both off, for comparing with its figures (`benchmarks/tb_plugin_check.py`).
"""

from __future__ import annotations

from collections.abc import Callable

import msgspec
import numpy as np

from torchtop.analysis.intervals import Floats, IntervalSet
from torchtop.analysis.steps import StepWindows
from torchtop.analysis.vocabulary import (
    COPY_OP_NAMES,
    TB_PLUGIN_COLLECTIVE_NAMES,
    is_collective_annotation,
    is_comm_kernel,
    is_cpu_collective,
    is_dataloader,
    is_driver_call,
    mask_names,
)
from torchtop.traces.data import NO_ID, Spans, TraceData
from torchtop.traces.heap import let_go

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


class Accounting(msgspec.Struct, frozen=True):
    """Where torchtop counts differently from torch-tb-profiler, on purpose."""

    collectives_by_name: bool = True
    """A collective kernel is communication by its name, a host range by any collective
    library's prefix (`nccl:all_to_all`); False: kernels only when linked to a host range of
    tb_plugin's ten names, and only those ranges (tb_plugin)."""
    cpu_copies_as_memcpy: bool = True
    """On a CPU-only trace, copy operators are memcpy; False: CPU Exec (tb_plugin)."""


TORCHTOP = Accounting()
TB_PLUGIN = Accounting(collectives_by_name=False, cpu_copies_as_memcpy=False)


class Roles(msgspec.Struct, frozen=True):
    """Each category's busy time as an interval set, before priorities apply."""

    sets: dict[str, IntervalSet]
    comm_kernels: IntervalSet
    compute_kernels: IntervalSet


def role_sets(trace: TraceData, accounting: Accounting = TORCHTOP) -> Roles:
    names = trace.names
    cpu_only = len(trace.kernels) == 0
    if accounting.collectives_by_name:
        comm_kernel = mask_names(trace.kernels.name, names, is_comm_kernel)
        comm_op_test: Callable[[str], bool] = (
            is_cpu_collective if cpu_only else is_collective_annotation
        )
    else:
        comm_kernel = _linked_comm_kernels(trace)
        comm_op_test = TB_PLUGIN_COLLECTIVE_NAMES.__contains__
    ops, annotations = trace.ops, trace.annotations
    op_dl = mask_names(ops.name, names, is_dataloader)
    op_comm = mask_names(ops.name, names, comm_op_test) & ~op_dl
    ann_dl = mask_names(annotations.name, names, is_dataloader)
    ann_comm = mask_names(annotations.name, names, comm_op_test) & ~ann_dl
    # Each set is made alone, and the freed pages of its making let go before the next.
    items = len(trace.kernels) + len(ops) + len(trace.runtime)
    compute = _set(trace.kernels, ~comm_kernel)
    let_go(items)
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
    if cpu_only and accounting.cpu_copies_as_memcpy:
        copies = _set(ops, mask_names(ops.name, names, COPY_OP_NAMES.__contains__))
        copies = copies.subtract(dataloader).subtract(comm)
    runtime = trace.runtime
    launches = _set(runtime, ~mask_names(runtime.name, names, is_driver_call))
    let_go(items)
    cpu_exec = _set(ops, ~op_dl & ~op_comm).union(_set(annotations, ~ann_dl & ~ann_comm))
    let_go(items)
    sets = {
        "kernel": compute,
        "memcpy": copies,
        "memset": _set(trace.memsets),
        "communication": comm,
        "runtime": launches,
        "dataloader": dataloader,
        "cpu_exec": cpu_exec,
    }
    return Roles(sets, comm_kernels=_set(trace.kernels, comm_kernel), compute_kernels=compute)


def _linked_comm_kernels(trace: TraceData) -> np.ndarray:
    """Kernels launched under a host range tb_plugin names a collective (`nccl:all_reduce`...),
    told by the external id they share: which kernels tb_plugin counts as communication."""
    ids = []
    for spans in (trace.ops, trace.annotations):
        named = mask_names(spans.name, trace.names, TB_PLUGIN_COLLECTIVE_NAMES.__contains__)
        ids.append(spans.external_id[named])
    linked = np.concatenate(ids)
    return np.isin(trace.kernels.external_id, linked[linked != NO_ID])


def _set(spans: Spans, mask: np.ndarray | None = None) -> IntervalSet:
    if mask is None:
        return IntervalSet.of(spans.start_us, spans.end_us)
    return IntervalSet.of(spans.start_us, spans.end_us, mask)


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
    # Each category's temporaries are as long as its set (millions on a big trace); their
    # freed pages, given back before the next, keep the heap from growing over them.
    intervals = sum(len(s) for s in roles.sets.values())
    for category in CATEGORIES[:-1]:
        taken = free.intersect(roles.sets[category])
        let_go(intervals)
        costs[category] = taken.covered_within(lo, hi)
        free = free.subtract(taken)
        del taken
        let_go(intervals)
    costs["other"] = free.covered_within(lo, hi)
    return StepCosts(total_us=hi - lo, costs=costs)
