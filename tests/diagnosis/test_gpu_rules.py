"""The GPU-class rules that name a code change (issue 32): each fires on a real trace, or on a
small planted trace with the event shapes of real ones, and stays quiet on a control; each
finding's predicted gain is `1 / (1 - share)` of the metric its rule recovers, and the metrics
agree with counts made here straight from the trace's JSON."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import RESNET_NW4, analyze_json
from tests.synthetic import Loop, document, span, write_json

TIMESFORMER = "tracelens/h100/facebook_timesformer-base-finetuned-k400__1016002.json.gz"
OWLV2 = "tracelens/h100/google_owlv2-large-patch14-ensemble__1016001.json.gz"
QWEN = "tracelens/h100/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz"
BERT = "tracelens/h100/gaunernst_bert-small-uncased__1016001.json.gz"
FALCONSAI = "tracelens/h100/Falconsai_nsfw_image_detection__1016002.json.gz"
MI300 = "tracelens/mi300/resnet_act_checkpoint.json.gz"
FUSED_ADAM = "hta/trace_diff/control/control.json.gz"
COMPILED = "tracelens/torch_compile_triton/trace.json.gz"

# (rule, the metric its predicted gain comes from, traces it fires on, controls)
CASES = [
    ("attention-unfused", "attention_fusion_share", [TIMESFORMER, OWLV2], [QWEN, BERT]),
    ("optimizer-for-loop", "optimizer_wait_share", [RESNET_NW4], [FUSED_ADAM]),
    ("conv-nchw-transposes", "conv_transpose_share", [MI300], [RESNET_NW4, FALCONSAI]),
    ("elementwise-chains", "elementwise_fusion_share", [QWEN], [COMPILED, RESNET_NW4]),
    ("fusion-candidates", "fusion_top_share", [QWEN, RESNET_NW4], [FUSED_ADAM, COMPILED]),
]


def _finding(report: dict[str, Any], rule: str) -> dict[str, Any] | None:
    return next((f for f in report["findings"] if f["rule"] == rule), None)


@pytest.mark.parametrize(
    ("rule", "metric", "trace"),
    [(rule, metric, trace) for rule, metric, fires, _ in CASES for trace in fires],
)
def test_each_gpu_rule_fires_on_its_real_trace_with_the_gain_of_its_share(
    shared: Path, rule: str, metric: str, trace: str
) -> None:
    report = analyze_json(shared / trace)
    finding = _finding(report, rule)
    assert finding is not None, [f["rule"] for f in report["findings"]]
    share = report["metrics"][metric]
    assert finding["recoverable_share"] == pytest.approx(share, abs=1e-4)
    assert finding["predicted_gain"] == pytest.approx(1 / (1 - share), abs=0.006)
    assert finding["fixes"], "a finding of these rules always offers its fix"


@pytest.mark.parametrize(
    ("rule", "trace"), [(rule, trace) for rule, _, _, quiet in CASES for trace in quiet]
)
def test_each_gpu_rule_stays_quiet_on_its_control(shared: Path, rule: str, trace: str) -> None:
    assert _finding(analyze_json(shared / trace), rule) is None


def _events(path: Path) -> list[dict[str, Any]]:
    with gzip.open(path, "rt") as file:
        events: list[dict[str, Any]] = json.load(file)["traceEvents"]
    return events


def test_the_optimizer_kernels_are_those_launched_inside_optimizer_step(shared: Path) -> None:
    """Counted here from the JSON: launches (by correlation) whose host call lies inside an
    `Optimizer.step#` operator on its thread; SGD with momentum on ResNet-50's 161 parameters
    launches 3 kernels each."""
    events = _events(shared / RESNET_NW4)
    windows = [
        (e["tid"], e["ts"], e["ts"] + e["dur"])
        for e in events
        if str(e.get("name", "")).startswith("Optimizer.step#")
    ]
    launched = {
        e["args"]["correlation"]
        for e in events
        if e.get("cat") == "Runtime"
        and any(t == e["tid"] and a <= e["ts"] < b for t, a, b in windows)
    }
    kernels = [
        e for e in events if e.get("cat") == "Kernel" and e["args"]["correlation"] in launched
    ]
    report = analyze_json(shared / RESNET_NW4)
    per_step = report["metrics"]["optimizer_kernels_per_step"]
    assert per_step == pytest.approx(len(kernels) / len(windows)) == 483
    assert not any("multi_tensor" in k["name"] for k in kernels)


def test_unfused_attention_holds_every_softmax_kernel_of_the_trace(shared: Path) -> None:
    """TimeSformer's attention is hand-written: every softmax kernel it runs lies inside the
    unfused attention, and the share a fused kernel saves is at least their time."""
    events = _events(shared / TIMESFORMER)
    softmax_us = sum(
        e["dur"] for e in events if e.get("cat") == "kernel" and "SoftMaxForward" in e["name"]
    )
    report = analyze_json(shared / TIMESFORMER)
    step_us = report["steps"]["mean_ms"] * 1000 * report["steps"]["count"]
    metrics = report["metrics"]
    assert metrics["attention_fusion_share"] * step_us >= softmax_us > 0
    assert metrics["attention_unfused_share"] > metrics["attention_fusion_share"]


def _conv_step(loop: Loop, number: int, at: float, kernels: list[tuple[str, float]]) -> None:
    """One 100 µs step: a convolution whose `aten::cudnn_convolution` launches `kernels`."""
    loop.step(number, at, 100)
    dims = {"Input Dims": [[32, 64, 56, 56], [64, 64, 3, 3]], "Input type": ["c10::BFloat16"] * 2}
    for depth, name in enumerate(("aten::conv2d", "aten::convolution", "aten::cudnn_convolution")):
        loop.events.append(span("cpu_op", name, at + 5 + depth, 60 - 2 * depth, **dims))
    device_at = at + 20
    for index, (name, dur) in enumerate(kernels):
        loop.launch(at + 10 + 5 * index, 4, device_ts=device_at, device_dur=dur, name=name)
        device_at += dur


NCHW_TO_NHWC = (
    "void cudnn::engines_precompiled::nchwToNhwcKernel<__nv_bfloat16, __nv_bfloat16, float, "
    "false, true, (cudnnKernelDataType_t)0>(cudnn::engines_precompiled::nchw2nhwc_params_t"
    "<float>, __nv_bfloat16 const*, __nv_bfloat16*)"
)
NHWC_TO_NCHW = NCHW_TO_NHWC.replace("nchwToNhwc", "nhwcToNchw").replace("nchw2nhwc", "nhwc2nchw")
FPROP = (
    "void cutlass__5x_cudnn::Kernel<cutlass_tensorop_bf16_s16816fprop_optimized_bf16_256x64_32x4"
    "_nhwc_align8>(cutlass_tensorop_bf16_s16816fprop_optimized_bf16_256x64_32x4_nhwc_align8::Params)"
)
H100 = {"id": 0, "name": "NVIDIA H100 80GB HBM3", "totalGlobalMem": 85018279936}
H100 |= {"computeMajor": 9, "computeMinor": 0, "numSms": 132}


def _planted_convs(path: Path, kernels: list[tuple[str, float]]) -> dict[str, Any]:
    loop = Loop()
    for number in range(1, 6):
        _conv_step(loop, number, (number - 1) * 100.0, kernels)
    write_json(path, document(loop.events, deviceProperties=[H100]))
    return analyze_json(path)


def test_nchw_convolutions_on_tensor_cores_fire_and_channels_last_ones_do_not(
    tmp_path: Path,
) -> None:
    """A planted H100 trace: each step's convolution runs cuDNN's NHWC Tensor Core kernel
    between the two layout transposes (10 µs each of a 100 µs step); its control runs the same
    kernel on channels_last tensors, with no transposes."""
    nchw = _planted_convs(
        tmp_path / "nchw.json", [(NCHW_TO_NHWC, 10.0), (FPROP, 40.0), (NHWC_TO_NCHW, 10.0)]
    )
    finding = _finding(nchw, "conv-nchw-transposes")
    assert finding is not None, [f["rule"] for f in nchw["findings"]]
    assert nchw["metrics"]["conv_transpose_share"] == pytest.approx(0.2, abs=0.01)
    assert finding["predicted_gain"] == pytest.approx(1.25, abs=0.02)
    assert [fix["knob"] for fix in finding["fixes"]] == ["code.channels_last"]
    nhwc = _planted_convs(tmp_path / "nhwc.json", [(FPROP, 40.0)])
    assert nhwc["metrics"]["conv_tc_share"] > 0
    assert _finding(nhwc, "conv-nchw-transposes") is None


def test_the_amp_rule_predicts_its_gain_from_the_datasheet_peaks(shared: Path) -> None:
    """ResNet-50 in float32 on a V100: the eligible kernels' time is taken to shrink to the
    float32 over float16 Tensor Core peak, 15.7 / 125 TFLOP/s (the V100 SXM2 datasheet)."""
    report = analyze_json(shared / RESNET_NW4)
    metrics = report["metrics"]
    assert metrics["amp_peak_ratio"] == pytest.approx(15.7 / 125)
    share = metrics["kernel_share"] * metrics["tc_eligible_share"] * (1 - 15.7 / 125)
    finding = _finding(report, "tensor-cores-unused")
    assert finding is not None
    assert finding["recoverable_share"] == pytest.approx(share, abs=1e-4)
    assert finding["predicted_gain"] == pytest.approx(1 / (1 - share), abs=0.006)


GEMM_KERNEL = (
    "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize64x64x64_warpgroupsize1x1x1_execute_"
    "segment_k_off_kernel__5x_cublas"
)


def _memory_event(at: float, size: int, address: int, total: int) -> dict[str, Any]:
    event = span("cpu_instant_event", "[memory]", at, 0)
    del event["dur"]
    event |= {"ph": "i", "s": "t"}
    event["args"] = {
        "Total Reserved": 1 << 30,
        "Total Allocated": total,
        "Bytes": size,
        "Addr": address,
        "Device Id": 0,
        "Device Type": 1,
    }
    return event


def _planted_linears(path: Path, rows: int, activation_bytes: int) -> dict[str, Any]:
    """Five 100 µs steps on an H100, each a `linear` of `rows` x 1024 by 1024 x 1024 whose
    GEMM kernel runs 30 µs; each step allocates `activation_bytes` over 100 MB of weights."""
    loop = Loop()
    dims = {
        "Input Dims": [[1024], [rows, 1024], [1024, 1024], [], []],
        "Input type": ["c10::BFloat16"] * 3 + ["Scalar", "Scalar"],
        "Concrete Inputs": ["", "", "", "1", "1"],
    }
    weights = 100 << 20
    for number in range(1, 6):
        at = (number - 1) * 100.0
        loop.step(number, at, 100)
        loop.events.append(span("cpu_op", "aten::linear", at + 5, 40))
        loop.events.append(span("cpu_op", "aten::addmm", at + 6, 38, **dims))
        loop.launch(at + 10, 4, device_ts=at + 20, device_dur=30, name=GEMM_KERNEL)
        total = weights + activation_bytes
        loop.events.append(_memory_event(at + 7, activation_bytes, 4096 * number, total))
        loop.events.append(_memory_event(at + 90, -activation_bytes, 4096 * number, weights))
    write_json(path, document(loop.events, deviceProperties=[H100]))
    return analyze_json(path)


def test_gemms_that_cannot_fill_the_gpu_fire_where_memory_has_room_for_a_larger_batch(
    tmp_path: Path,
) -> None:
    """32 rows x 1024 columns is 16 tiles of 64x64 on 132 SMs: 30% of each step in GEMMs
    that would not fill the device at twice the batch; half of it per sample is the gain."""
    small = _planted_linears(tmp_path / "small.json", rows=32, activation_bytes=1 << 20)
    finding = _finding(small, "gemm-too-small")
    assert finding is not None, [f["rule"] for f in small["findings"]]
    assert small["metrics"]["small_gemm_share"] == pytest.approx(0.3, abs=0.01)
    assert small["metrics"]["small_gemm_fill"] == pytest.approx(16 / 132, abs=1e-5)
    assert finding["predicted_gain"] == pytest.approx(1 / (1 - 0.15), abs=0.01)
    assert [fix["knob"] for fix in finding["fixes"]] == ["train.batch_size"]
    large = _planted_linears(tmp_path / "large.json", rows=8192, activation_bytes=1 << 20)
    assert large["metrics"]["small_gemm_share"] == 0.0
    assert _finding(large, "gemm-too-small") is None
    full = 80 << 30  # an activation that leaves no room for a second one
    crowded = _planted_linears(tmp_path / "crowded.json", rows=32, activation_bytes=full)
    assert crowded["metrics"]["memory_batch_factor_max"] < 2
    assert _finding(crowded, "gemm-too-small") is None


def test_every_gemm_counted_small_ran_under_one_block_per_sm(shared: Path) -> None:
    """bert-small on an H100: the kernels Kineto records for the GEMMs counted small report
    under one thread block per SM (`blocks per SM`, the profiler's own figure)."""
    events = _events(shared / BERT)
    small_ops = set()
    for e in events:
        if e.get("cat") == "cpu_op" and e["name"] in {"aten::addmm", "aten::mm"}:
            dims = e["args"]["Input Dims"]
            a, b = (dims[1], dims[2]) if e["name"] == "aten::addmm" else (dims[0], dims[1])
            tiles = -(-a[-2] // 64) * -(-b[-1] // 64)
            if 2 * tiles <= 132:
                small_ops.add(e["args"]["External id"])
    blocks = [
        e["args"]["blocks per SM"]
        for e in events
        if e.get("cat") == "kernel" and e["args"].get("External id") in small_ops
    ]
    assert blocks and max(blocks) < 1.0
    assert analyze_json(shared / BERT)["metrics"]["small_gemm_share"] > 0


def test_the_roofline_bounds_what_fused_attention_could_save(shared: Path) -> None:
    """TimeSformer's products, counted here from their recorded dims (2*B*M*N*K each), at the
    H100 SXM5's dense bf16 peak (989.4 TFLOP/s, NVIDIA's Hopper architecture paper): the
    unfused kernels' time beyond that is the bound, and the measured prediction lies under it."""
    report = analyze_json(shared / TIMESFORMER)
    metrics = report["metrics"]
    flops = 0.0
    for e in _events(shared / TIMESFORMER):
        if e.get("cat") == "cpu_op" and e["name"] == "aten::bmm":
            (b, m, k), (_, _, n) = e["args"]["Input Dims"][:2]
            flops += 2.0 * b * m * n * k
    step_us = report["steps"]["mean_ms"] * 1000
    ideal_us = flops / 989.4e12 * 1e6
    bound = metrics["attention_unfused_share"] - ideal_us / step_us
    assert metrics["attention_roofline_share"] == pytest.approx(bound, abs=1e-4)
    assert metrics["attention_fusion_share"] < metrics["attention_roofline_share"]
