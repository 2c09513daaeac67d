"""The report's `efficiency`: modelled FLOPs per step, MFU, and every operator shape on the
roofline, from the shapes a trace recorded (`record_shapes=True`).

Which operators count. `op_cost` models nested operators each (aten::linear and the aten::addmm
it calls; aten::convolution, aten::_convolution and aten::cudnn_convolution), so one level of a
call stack must be chosen or the FLOPs count twice. Here it is the innermost modelled operator:
one with no modelled operator running inside it on its thread. That is the level that launches
the kernels, and the level TraceLens's perf model puts GEMMs at (aten::mm, addmm, bmm, never
aten::linear or aten::matmul), so its GEMM rows and these agree call for call. TraceLens puts
convolutions and norms a level higher (aten::convolution, aten::layer_norm); the calls and the
kernels are the same, under the inner name (aten::cudnn_convolution, aten::native_layer_norm).
An outer operator whose inner one could not be costed (a convolution recorded without its
concrete arguments) counts itself.

Operators count in the steps the analysis kept, by their start (as `name_totals` counts them).
On a GPU trace an operator's time is its device work (`op_time`), and a call that launched none
is left out: its FLOPs, if any, ran on the host. MFU is the modelled FLOPs per step over the
mean step time and the device's dense datasheet peak for the dtype most of them ran in; a
trace's FLOPs are those of the operators modelled, so MFU is a lower bound where some went
unmodelled (Inductor's Triton kernels, custom ops).
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec
import numpy as np
import numpy.typing as npt

from torchtop.analysis.coverage import (
    FLOOR_SHARE,
    modelled_share,
    pooled_unmodelled,
    unmodelled_work,
)
from torchtop.analysis.idle import idle_breakdown
from torchtop.analysis.intervals import IntervalSet
from torchtop.analysis.nesting import holds_another
from torchtop.analysis.op_cost import OpCost, modelled_operators, op_cost
from torchtop.analysis.op_time import has_device_work, operator_time_us
from torchtop.analysis.peaks import match_device_info
from torchtop.analysis.roofline import above_roofline, roofline_fraction
from torchtop.analysis.steps import StepWindows, host_steps
from torchtop.analysis.vocabulary import codes_where
from torchtop.model.efficiency import Efficiency, OpEfficiency, Unmodelled
from torchtop.model.peak import Peak
from torchtop.traces.data import NO_ID, Ints, TraceData
from torchtop.traces.shapes import SEPARATOR, decoded, parts

CPU_DEVICE = "CPU"


def trace_efficiency(
    trace: TraceData, steps: StepWindows, step_mean_us: float | None
) -> Efficiency | None:
    """The trace's efficiency; None where no operator recorded its shapes, none of those is
    modelled, or no step was kept."""
    if not trace.shapes or len(steps) == 0:
        return None
    index, group, keys, costs = _costed(trace)
    index, group = _counted(trace, steps, index, group, costs)
    time_us = operator_time_us(trace, index)
    on_device = has_device_work(trace)
    unmodelled = unmodelled_work(trace, steps, index) if on_device else None
    if on_device:
        launched = time_us > 0
        group, time_us = group[launched], time_us[launched]
    calls = np.bincount(group, minlength=len(keys))
    totals = np.bincount(group, weights=time_us, minlength=len(keys))
    facts = [
        _facts(trace, int(keys[g]), cost, int(calls[g]), float(totals[g]))
        for g, cost in enumerate(costs)
        if cost is not None and calls[g] > 0
    ]
    if not facts:
        return None  # shapes recorded, but of no operator modelled: nothing to measure
    device = trace.devices[0] if trace.devices and on_device else None
    return assemble(
        device=CPU_DEVICE if not on_device else (device.name if device else "unknown GPU"),
        peak=match_device_info(device) if device is not None else None,
        steps=len(steps),
        step_mean_us=step_mean_us,
        facts=facts,
        time_source="device" if on_device else "host",
        idle=(idle_breakdown(trace, steps) or None) if on_device else None,
        unmodelled=unmodelled,
    )


MATRIX_FAMILIES = frozenset({"gemm", "conv", "attention"})
"""The families whose FLOPs make MFU: an operator of these is counted even where it runs
copies of its own."""


def _costed(trace: TraceData) -> tuple[Ints, Ints, Ints, list[OpCost | None]]:
    """The operators `op_cost` gives a cost for: their indices, each one's group (a distinct
    name and argument triple), the groups' keys and costs. Each group is costed once."""
    ops = trace.ops
    modelled = codes_where(trace.names, modelled_operators().__contains__)
    index = np.flatnonzero(np.isin(ops.name, modelled) & (trace.op_shape != NO_ID))
    width = len(trace.shapes)
    keys, group = np.unique(
        ops.name[index].astype(np.int64) * width + trace.op_shape[index], return_inverse=True
    )
    costs = [_cost(trace, int(key), width) for key in keys.tolist()]
    known = np.array([cost is not None for cost in costs], dtype=np.bool_)
    kept = known[group] if len(group) else np.zeros(0, dtype=np.bool_)
    return index[kept], group[kept], keys, costs


def _cost(trace: TraceData, key: int, width: int) -> OpCost | None:
    dims, types, concrete = decoded(trace.shapes[key % width])
    return op_cost(trace.names[key // width], dims, types, concrete)


def _counted(
    trace: TraceData, steps: StepWindows, index: Ints, group: Ints, costs: list[OpCost | None]
) -> tuple[Ints, Ints]:
    """Of the costed operators, the innermost ones that start in a kept step. A matrix
    operator (GEMM, convolution, attention) gives way only to a matrix operator inside it
    (`aten::linear` to its `aten::addmm`), never to the copies and fills it runs itself (the
    CPU flash attention's backward zeroes and copies its gradients: counted as a copy, its
    2.5x of the forward's FLOPs were lost on nanoGPT); any other operator gives way to any
    costed one inside it (`aten::to` to its `aten::copy_`)."""
    families = np.array([c.family if c is not None else "" for c in costs], dtype=object)
    matrix = np.isin(families[group], list(MATRIX_FAMILIES)) if len(group) else group == 0
    outer = _holds_another(trace, index) & ~matrix
    outer[matrix] = _holds_another(trace, index[matrix])
    step_start, step_end, _, _ = host_steps(trace)
    kept = IntervalSet(step_start[: len(steps)], step_end[: len(steps)]).contains(
        trace.ops.start_us[index]
    )
    chosen = ~outer & kept
    return index[chosen], group[chosen]


def _holds_another(trace: TraceData, index: Ints) -> npt.NDArray[np.bool_]:
    ops = trace.ops
    return holds_another(ops.start_us[index], ops.end_us[index], ops.thread[index])


Facts = tuple[str, bytes, OpCost, int, float]
"""An operator group's name, argument triple, cost of one call, calls and total time (µs)."""


def _facts(trace: TraceData, key: int, cost: OpCost, calls: int, time_us: float) -> Facts:
    width = len(trace.shapes)
    return trace.names[key // width], trace.shapes[key % width], cost, calls, time_us


def assemble(
    *,
    device: str,
    peak: Peak | None,
    steps: int,
    step_mean_us: float | None,
    facts: Sequence[Facts],
    time_source: str,
    idle: dict[str, float] | None,
    unmodelled: Sequence[Unmodelled] | None = None,
) -> Efficiency:
    """The section from its operator groups' facts: rates, roofline, FLOPs per step, MFU, and
    the share of the device time they cover where `unmodelled` (the rest) is known."""
    rows = sorted((_row(f, peak) for f in facts), key=lambda r: (-r.time_us, r.name))
    by_dtype: dict[str | None, float] = {}
    for row in rows:
        by_dtype[row.dtype] = by_dtype.get(row.dtype, 0.0) + row.flops * row.calls
    flops_per_step = sum(by_dtype.values()) / steps if steps else 0.0
    dtype = max(by_dtype, key=lambda d: by_dtype[d]) if by_dtype else None
    share = None
    if unmodelled is not None:
        share = modelled_share(sum(row.time_us for row in rows), unmodelled)
    return Efficiency(
        device=device,
        peak=peak,
        steps=steps,
        step_mean_us=step_mean_us,
        flops_per_step=flops_per_step,
        mfu=_mfu(flops_per_step, step_mean_us, peak, dtype),
        mfu_dtype=dtype,
        time_source=time_source,
        ops=tuple(rows),
        idle=idle,
        modelled_share=share,
        mfu_is_floor=share is not None and share < FLOOR_SHARE,
        unmodelled=tuple(unmodelled or ()),
    )


def _mfu(
    flops_per_step: float, step_mean_us: float | None, peak: Peak | None, dtype: str | None
) -> float | None:
    limit = peak.for_dtype(dtype) if peak is not None and dtype is not None else None
    if not limit or not step_mean_us or flops_per_step <= 0:
        return None
    return flops_per_step / (step_mean_us / 1e6) / (limit * 1e12)


def _row(facts: Facts, peak: Peak | None) -> OpEfficiency:
    name, key, cost, calls, time_us = facts
    dims, types, concrete = (_compact(part) for part in parts(key))
    seconds = time_us / 1e6
    intensity = cost.flops / cost.bytes if cost.bytes > 0 else None
    peak_tflops = peak.for_dtype(cost.dtype) if peak is not None and cost.dtype else None
    bandwidth = peak.tb_s if peak is not None else None
    tflops_s = cost.flops * calls / seconds / 1e12 if seconds > 0 else None
    tb_s = cost.bytes * calls / seconds / 1e12 if seconds > 0 else None
    bound = None
    if intensity is not None and peak_tflops and bandwidth:
        bound = "compute" if intensity >= peak_tflops / bandwidth else "memory"
    return OpEfficiency(
        name=name,
        input_dims=dims,
        input_type=types,
        concrete_inputs=concrete,
        family=cost.family,
        dtype=cost.dtype,
        calls=calls,
        flops=cost.flops,
        bytes=cost.bytes,
        time_us=time_us,
        tflops_s=tflops_s,
        tb_s=tb_s,
        intensity=intensity,
        bound=bound,
        roofline_fraction=roofline_fraction(cost, calls, seconds, peak_tflops, bandwidth),
        above_roofline=above_roofline(cost, tflops_s, tb_s, peak),
    )


def _compact(text: bytes) -> str:
    """JSON text without the pretty-printer's spaces and newlines (a trace written with
    `indent` spreads one shape over lines)."""
    try:
        return msgspec.json.encode(msgspec.json.decode(text)).decode()
    except msgspec.DecodeError:
        return text.decode("utf-8", "replace")


def pooled(parts: Sequence[Efficiency | None]) -> Efficiency | None:
    """Several files of one rank, or the ranks of a job: calls and time added per operator
    shape, steps added, the step time and idle shares weighted by steps. FLOPs per step are
    then per rank (every rank runs the model), and MFU is one device's."""
    present = [p for p in parts if p is not None]
    if len(present) <= 1:
        return present[0] if present else None
    merged: dict[tuple[str, bytes], tuple[OpCost, int, float]] = {}
    for part in present:
        for name, key, cost, calls, time_us in facts_of(part):
            _, calls_before, time_before = merged.get((name, key), (cost, 0, 0.0))
            merged[name, key] = (cost, calls_before + calls, time_before + time_us)
    first = present[0]
    return assemble(
        device=first.device,
        peak=first.peak,
        steps=sum(p.steps for p in present),
        step_mean_us=_weighted([(p.step_mean_us, p.steps) for p in present]),
        facts=[(name, key, *rest) for (name, key), rest in merged.items()],
        time_source=first.time_source,
        idle=_pooled_idle(present),
        unmodelled=pooled_unmodelled([p.unmodelled for p in present])
        if all(p.modelled_share is not None for p in present)
        else None,
    )


def with_peak(efficiency: Efficiency, peak: Peak) -> Efficiency:
    """The same operators and steps held against another peak (a CPU's, measured)."""
    return assemble(
        device=efficiency.device,
        peak=peak,
        steps=efficiency.steps,
        step_mean_us=efficiency.step_mean_us,
        facts=facts_of(efficiency),
        time_source=efficiency.time_source,
        idle=efficiency.idle,
        unmodelled=efficiency.unmodelled if efficiency.modelled_share is not None else None,
    )


def facts_of(efficiency: Efficiency) -> list[Facts]:
    """What `assemble` made the section's rows from, back from the rows."""
    return [
        (row.name, _key_of(row), _cost_of(row), row.calls, row.time_us) for row in efficiency.ops
    ]


def _cost_of(row: OpEfficiency) -> OpCost:
    return OpCost(row.flops, row.bytes, row.family, row.dtype)


def _key_of(row: OpEfficiency) -> bytes:
    texts = (row.input_dims, "", row.input_type, row.concrete_inputs)
    return SEPARATOR.join(text.encode() for text in texts)


def _weighted(values: Sequence[tuple[float | None, int]]) -> float | None:
    known = [(v, w) for v, w in values if v is not None]
    weight = sum(w for _, w in known)
    return sum(v * w for v, w in known) / weight if weight else None


def _pooled_idle(parts: Sequence[Efficiency]) -> dict[str, float] | None:
    measured = [p for p in parts if p.idle]
    if not measured:
        return None
    names = dict.fromkeys(k for p in measured for k in p.idle or {})
    pooled_idle = {
        name: _weighted([((p.idle or {}).get(name), p.steps) for p in measured]) for name in names
    }
    return {k: v for k, v in pooled_idle.items() if v is not None}
