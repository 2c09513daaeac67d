"""Patterns in a GPU job's kernels that a known code change removes: the metrics of the
GPU-class rules (`rules/attention-unfused.toml`, `optimizer-for-loop`, `conv-nchw-transposes`,
`gemm-too-small`, whose metrics `gemm_fill` makes).

Each pattern is found from the trace's columns alone: operators and annotations by name and
span, kernels by name, duration and the host range that launched them (`launches.Launches`).
Each comes with the share of the step its fix is predicted to recover, from measured kernel
times; what each prediction assumes is said where it is made, and in the rule's `why`.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import numpy as np

from torchtop.analysis import kernel_sequences
from torchtop.analysis.attention_roofline import attention_roofline
from torchtop.analysis.gemm_fill import small_gemm_metrics
from torchtop.analysis.intervals import IntervalSet
from torchtop.analysis.launches import Bools, Launches
from torchtop.analysis.peaks import match_device_info
from torchtop.analysis.steps import StepWindows
from torchtop.analysis.vocabulary import codes_where, distinct, uses_tensor_cores
from torchtop.model.analysis import Metrics
from torchtop.traces.data import Floats, Ints, Spans, TraceData

SOFTMAX_OPS = frozenset(
    {"aten::softmax", "aten::_softmax", "aten::_safe_softmax", "aten::_softmax_backward_data"}
)
BATCHED_GEMM_OPS = frozenset({"aten::bmm", "aten::baddbmm", "aten::matmul", "aten::einsum"})
"""The products of attention computed by hand: `q @ k.transpose(-2, -1)` and `p @ v`."""
GEMM_OPS = BATCHED_GEMM_OPS | {"aten::mm", "aten::addmm", "aten::linear", "aten::_scaled_mm"}
CONV_OPS = frozenset(
    {
        "aten::cudnn_convolution",
        "aten::miopen_convolution",
        "aten::convolution",
        "aten::_convolution",
        "aten::convolution_backward",
        "aten::cudnn_convolution_backward",
        "aten::miopen_convolution_backward",
    }
)
_LAYOUT_TRANSPOSE = re.compile(r"nchwToNhwc|nhwcToNchw|^batched_transpose_|transpose_NCHW2NHWC")
"""cuDNN's `nchwToNhwcKernel`/`nhwcToNchwKernel` and MIOpen's `batched_transpose_*` reorder an
NCHW tensor for an NHWC Tensor Core (matrix-core) convolution kernel, and back."""
OPTIMIZER_STEP = "Optimizer.step#"
_MULTI_TENSOR = re.compile(r"multi_tensor_apply|[Ff]used|foreach", re.IGNORECASE)
"""The kernels of `foreach` (`multi_tensor_apply_kernel`) and fused (`fused_adam`, apex's
`multi_tensor_adam`) optimizers: one launch updates many parameters."""


def gpu_pattern_metrics(trace: TraceData, steps: StepWindows, step_us: float) -> Metrics:
    """The patterns' metrics over the kernels that start within the steps, as shares of the
    summed step time `step_us`."""
    if len(trace.kernels) == 0 or len(steps) == 0 or step_us <= 0:
        return {}
    kernels = trace.kernels
    in_steps = (kernels.start_us >= steps.start_us[0]) & (kernels.start_us <= steps.end_us[-1])
    launches = Launches(trace)
    windows = attention_windows(trace)
    attention = launches.inside(*windows) & in_steps
    order = kernel_sequences.in_order(trace, float(steps.start_us[0]), float(steps.end_us[-1]))
    metrics = _attention(trace, launches, attention, step_us)
    if metrics["attention_unfused_share"]:
        unfused_us = float(metrics["attention_unfused_share"] or 0.0) * step_us
        metrics.update(attention_roofline(trace, windows, unfused_us, step_us))
    metrics.update(amp_peak_ratio(trace))
    metrics.update(_optimizer(trace, launches, in_steps, steps, step_us))
    metrics.update(_conv_layout(trace, launches, in_steps, step_us))
    metrics.update(small_gemm_metrics(trace, launches, in_steps, step_us))
    metrics.update(kernel_sequences.chain_metrics(trace, order, step_us, len(steps)))
    metrics.update(kernel_sequences.sequence_metrics(trace, order, attention, step_us, len(steps)))
    return metrics


def _attention(trace: TraceData, launches: Launches, inside: Bools, step_us: float) -> Metrics:
    """Unfused attention's kernel time, and the share a fused kernel saves. Measured model: a
    fused kernel (`F.scaled_dot_product_attention`) still does the two products, about as fast
    as the GEMM kernels did; the scaling, masking, softmax and dropout kernels between them,
    each a pass over the whole score matrix in device memory, go."""
    if not inside.any():
        return {"attention_unfused_share": 0.0, "attention_fusion_share": 0.0}
    gemm = _spans_named(trace.ops, trace.names, BATCHED_GEMM_OPS)
    products = inside & launches.inside(*gemm)
    durations = trace.kernels.dur_us
    unfused_us = float(durations[inside].sum())
    rest_us = unfused_us - float(durations[products].sum())
    return {
        "attention_unfused_share": unfused_us / step_us,
        "attention_fusion_share": rest_us / step_us,
    }


def _spans_named(
    spans: Spans, names: list[str], wanted: frozenset[str] | Callable[[str], bool]
) -> tuple[Floats, Floats, Ints]:
    """The spans (start, end, thread) whose name is in `wanted`, or passes it."""
    test = wanted.__contains__ if isinstance(wanted, frozenset) else wanted
    mine = np.isin(spans.name, codes_where(names, test))
    return spans.start_us[mine], spans.end_us[mine], spans.thread[mine]


def _is_optimizer_step(name: str) -> bool:
    return name.startswith(OPTIMIZER_STEP)


def _optimizer(
    trace: TraceData, launches: Launches, in_steps: Bools, steps: StepWindows, step_us: float
) -> Metrics:
    """The kernels `Optimizer.step` launches: how many a step, how many of them update many
    parameters at once, and the device's idle time between them. Measured model: a for-loop
    optimizer launches a few tiny kernels per parameter and the device waits on each launch;
    `foreach=True` (or `fused=True`) launches one kernel per chunk of parameters, so the waits
    go, while the bytes each update moves, and so its kernels' busy time, stay."""
    windows = [
        _spans_named(spans, trace.names, _is_optimizer_step)
        for spans in (trace.ops, trace.annotations)
    ]
    start, end, thread = (np.concatenate(parts) for parts in zip(*windows, strict=True))
    inside = launches.inside(start, end, thread) & in_steps
    count = int(inside.sum())
    if count == 0:
        return {"optimizer_kernels_per_step": 0.0} if len(start) else {}
    names = trace.names
    batched = codes_where(names, lambda n: _MULTI_TENSOR.search(n) is not None)
    kernels = trace.kernels
    return {
        "optimizer_kernels_per_step": count / len(steps),
        "optimizer_multi_tensor_fraction": float(np.isin(kernels.name[inside], batched).mean()),
        "optimizer_kernel_share": float(kernels.dur_us[inside].sum()) / step_us,
        "optimizer_wait_share": _idle_among(trace, inside, steps) / step_us,
    }


def _idle_among(trace: TraceData, chosen: Bools, steps: StepWindows) -> float:
    """The device's idle time, in all, between the first and the last chosen kernel of each
    step: no kernel of any kind ran then."""
    kernels = trace.kernels
    step_of = np.searchsorted(steps.start_us, kernels.start_us[chosen], side="right") - 1
    valid = step_of >= 0
    first = np.full(len(steps), np.inf)
    last = np.full(len(steps), -np.inf)
    np.minimum.at(first, step_of[valid], kernels.start_us[chosen][valid])
    np.maximum.at(last, step_of[valid], kernels.end_us[chosen][valid])
    used = np.isfinite(first)
    busy = IntervalSet.of(kernels.start_us, kernels.end_us)
    lo, hi = first[used], last[used]
    return float((hi - lo).sum() - busy.covered_within(lo, hi).sum())


def _conv_layout(trace: TraceData, launches: Launches, in_steps: Bools, step_us: float) -> Metrics:
    """Layout transposes that convolutions launch around Tensor Core kernels, and the
    convolutions' Tensor Core kernel time. Measured model: with the model and its input in
    `channels_last`, cuDNN and MIOpen run their NHWC kernels on the tensors as they are, so
    the transposes' time goes and the convolutions' own kernels stay."""
    in_conv = launches.inside(*_spans_named(trace.ops, trace.names, CONV_OPS)) & in_steps
    if not in_conv.any():
        return {}
    names = trace.names
    transposes = in_conv & np.isin(
        trace.kernels.name, codes_where(names, lambda n: _LAYOUT_TRANSPOSE.search(n) is not None)
    )
    matrix = in_conv & np.isin(trace.kernels.name, codes_where(names, uses_tensor_cores))
    durations = trace.kernels.dur_us
    return {
        "conv_tc_share": float(durations[matrix].sum()) / step_us,
        "conv_transpose_share": float(durations[transposes].sum()) / step_us,
    }


def attention_windows(trace: TraceData) -> tuple[Floats, Floats, Ints]:
    """Each softmax between two batched products on its thread, as the span from the first
    product's start to the second's end: attention computed by hand. The product before is the
    last GEMM operator to end before the softmax starts, the one after the first to start once
    it ends; both must be batched (`bmm`, `matmul`), which a classifier's `linear` then
    `softmax` is not."""
    ops = trace.ops
    soft_start, soft_end, soft_thread = _spans_named(ops, trace.names, SOFTMAX_OPS)
    gemm = np.isin(ops.name, codes_where(trace.names, GEMM_OPS.__contains__))
    batched = np.isin(ops.name, codes_where(trace.names, BATCHED_GEMM_OPS.__contains__))
    parts: list[tuple[Floats, Floats, Ints]] = []
    for thread in distinct(soft_thread):
        on = gemm & (ops.thread == thread)
        mine = soft_thread == thread
        parts.append(
            _between_products(
                ops.start_us[on], ops.end_us[on], batched[on], soft_start[mine], soft_end[mine]
            )
        )
        parts[-1] = (parts[-1][0], parts[-1][1], np.full(len(parts[-1][0]), thread))
    if not parts:
        return np.zeros(0), np.zeros(0), np.zeros(0, dtype=np.int64)
    start, end, thread = (np.concatenate(column) for column in zip(*parts, strict=True))
    return start, end, thread


def _between_products(
    g_start: Floats, g_end: Floats, g_batched: Bools, s_start: Floats, s_end: Floats
) -> tuple[Floats, Floats, Ints]:
    """On one thread: the spans from the GEMM before each softmax to the GEMM after it,
    where both are batched."""
    by_end = np.argsort(g_end, kind="stable")
    by_start = np.argsort(g_start, kind="stable")
    before = np.searchsorted(g_end[by_end], s_start, side="right") - 1
    after = np.searchsorted(g_start[by_start], s_end, side="left")
    found = (before >= 0) & (after < len(by_start))
    first, second = by_end[before[found]], by_start[after[found]]
    keep = g_batched[first] & g_batched[second]
    return g_start[first][keep], g_end[second][keep], np.zeros(0, dtype=np.int64)


def amp_peak_ratio(trace: TraceData) -> Metrics:
    """The device's dense float32 peak over its half-precision Tensor Core peak (bfloat16 from
    compute capability 8.0, float16 before: Volta and Turing have no bfloat16 Tensor Cores),
    from the datasheet table (`analysis/peaks.toml`); absent where the device is not known.
    A compute-bound float32 GEMM moved to Tensor Cores takes about this fraction of its time."""
    for device in trace.devices:
        peak = match_device_info(device)
        if peak is None:
            continue
        half = "bf16" if (device.compute_major or 0) >= 8 else "fp16"
        fp32, fast = peak.for_dtype("fp32"), peak.for_dtype(half)
        if fp32 and fast:
            return {"amp_peak_ratio": fp32 / fast}
    return {}
