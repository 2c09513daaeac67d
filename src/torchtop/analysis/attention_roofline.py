"""The least time a fused attention kernel could take for hand-written attention: its two
products' FLOPs at the device's peak for their dtype (`op_cost`, `peaks`), from the operators'
recorded shapes. What the unfused kernels take beyond it bounds what
`F.scaled_dot_product_attention` could save (`attention_roofline_share`), since no kernel runs
faster than its roofline; the rule's prediction itself is from measured times
(`gpu_patterns._attention`).
"""

from __future__ import annotations

import numpy as np

from torchtop.analysis.launches import within
from torchtop.analysis.op_cost import op_cost
from torchtop.analysis.peaks import match_device_info
from torchtop.analysis.vocabulary import codes_where
from torchtop.model.analysis import Metrics
from torchtop.model.peak import Peak
from torchtop.traces.data import NO_ID, Floats, Ints, TraceData
from torchtop.traces.shapes import decoded

PRODUCTS = frozenset({"aten::bmm", "aten::baddbmm"})
"""The innermost batched products (`matmul` and `einsum` call them): counted once each."""


def attention_roofline(
    trace: TraceData, windows: tuple[Floats, Floats, Ints], unfused_us: float, step_us: float
) -> Metrics:
    """`attention_roofline_share`: the unfused attention's kernel time beyond its products'
    FLOPs at peak, over the step; {} where a product's shape, dtype or the peak is not known."""
    peak = next((p for d in trace.devices if (p := match_device_info(d)) is not None), None)
    if peak is None or len(trace.op_shape) != len(trace.ops):
        return {}
    ops = trace.ops
    chosen = np.flatnonzero(
        np.isin(ops.name, codes_where(trace.names, PRODUCTS.__contains__))
        & within(ops.start_us, ops.thread, *windows)
    )
    if not len(chosen):
        return {}
    ideal_us = 0.0
    seen: dict[tuple[int, int], float | None] = {}
    for name, shape in zip(ops.name[chosen].tolist(), trace.op_shape[chosen].tolist(), strict=True):
        if (name, shape) not in seen:
            seen[name, shape] = _ideal_us(trace, name, shape, peak)
        call_us = seen[name, shape]
        if call_us is None:
            return {}
        ideal_us += call_us
    return {"attention_roofline_share": max(unfused_us - ideal_us, 0.0) / step_us}


def _ideal_us(trace: TraceData, name: int, shape: int, peak: Peak) -> float | None:
    """One call's FLOPs at the peak of its dtype, µs; None where not known."""
    cost = None if shape == NO_ID else op_cost(trace.names[name], *decoded(trace.shapes[shape]))
    tflops = None if cost is None or cost.dtype is None else peak.for_dtype(cost.dtype)
    return None if cost is None or not tflops else cost.flops / (tflops * 1e6)
