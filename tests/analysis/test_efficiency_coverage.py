"""How much of the device time the efficiency's FLOPs cover (`modelled_share`), what the rest
is (`unmodelled`), and MFU read as a floor where the share is low; held against the device time
counted here straight from the trace's JSON events."""

from __future__ import annotations

import contextlib
import gzip
import io
import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import analyze_json
from torchtop.analysis.efficiency import assemble
from torchtop.analysis.op_cost import OpCost
from torchtop.analysis.peaks import match_device
from torchtop.cli import main
from torchtop.model.efficiency import Unmodelled
from torchtop.traces.shapes import SEPARATOR

RESNET = "kineto-tb-plugin/resnet50_num_workers_0/worker0.1623143089861.pt.trace.json.gz"
QWEN = "tracelens/h100/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz"
MI300 = "tracelens/mi300/resnet_act_checkpoint.json.gz"
RUNTIME = {"cuda_runtime", "runtime", "cuda_driver"}
DEVICE = {"kernel", "gpu_memcpy", "gpu_memset", "memcpy", "memset"}


def device_time_in_steps(path: Path, steps: list[int]) -> float:
    """The µs of every kernel, copy and memset whose runtime call starts in one of the numbered
    ProfilerStep spans, joined on the events' correlation ids; collectives' kernels (named
    nccl or rccl) left out."""
    with gzip.open(path, "rt") as stream:
        events: list[dict[str, Any]] = json.load(stream)["traceEvents"]
    spans = [e for e in events if e.get("ph") == "X"]
    windows = [
        (float(e["ts"]), float(e["ts"]) + float(e["dur"]))
        for e in spans
        if str(e.get("name", "")).startswith("ProfilerStep#")
        and e.get("cat") != "gpu_user_annotation"  # the device's copy of the step
        and int(str(e["name"]).split("#")[1]) in steps
    ]
    assert len(windows) == len(steps)
    launched = {
        e["args"]["correlation"]
        for e in spans
        if str(e.get("cat", "")).lower() in RUNTIME
        and "correlation" in e.get("args", {})
        and any(start <= float(e["ts"]) < end for start, end in windows)
    }
    return sum(
        float(e["dur"])
        for e in spans
        if str(e.get("cat", "")).lower() in DEVICE
        and e.get("args", {}).get("correlation") in launched
        and not any(lib in str(e["name"]).lower() for lib in ("nccl", "rccl"))
    )


def covered(shared: Path, name: str) -> tuple[dict[str, Any], float, float]:
    """The report's efficiency section, the device time counted here and the modelled rows'
    time, having checked that the section's share is the one over the other."""
    report = analyze_json(shared / name)
    steps = [s["step"] for s in report["steps"]["per_step"]]
    section = report["efficiency"]
    device_us = device_time_in_steps(shared / name, steps)
    modelled = sum(op["time_us"] for op in section["ops"])
    assert section["modelled_share"] == pytest.approx(modelled / device_us, rel=1e-6)
    return section, device_us, modelled


def test_resnet50_without_concrete_inputs_models_a_third_of_its_device_time_and_mfu_is_a_floor(
    shared: Path,
) -> None:
    section, device_us, modelled = covered(shared, RESNET)
    assert section["modelled_share"] < 0.5
    assert section["mfu_is_floor"] is True
    assert section["mfu"] is not None and section["mfu"] < 0.01
    unmodelled = {(u["name"], u["reason"]): u for u in section["unmodelled"]}
    forward = unmodelled["aten::cudnn_convolution", "no Concrete Inputs recorded"]
    backward = unmodelled["aten::cudnn_convolution_backward_weight", "not a modelled operator"]
    assert ("aten::cudnn_convolution_backward_input", "not a modelled operator") in unmodelled
    assert forward["share"] > 0.15 and backward["share"] > 0.15
    assert forward["share"] == pytest.approx(forward["time_us"] / device_us, rel=1e-6)
    # Everything launched in the steps is either modelled or listed (seven groups: no cut-off).
    listed = sum(u["time_us"] for u in section["unmodelled"])
    assert modelled + listed == pytest.approx(device_us, rel=1e-6)


def test_qwen_on_h100_models_most_of_its_device_time_and_mfu_is_not_a_floor(
    shared: Path,
) -> None:
    section, _, _ = covered(shared, QWEN)
    assert section["modelled_share"] > 0.8
    assert section["mfu_is_floor"] is False
    shares = [u["share"] for u in section["unmodelled"]]
    assert shares == sorted(shares, reverse=True)


def test_a_data_parallel_jobs_all_reduce_is_not_counted_as_unmodelled_work(shared: Path) -> None:
    """On MI300X, RCCL's all-reduce kernels take two thirds of the device time; they do no
    model FLOPs, so they are neither in the share's denominator nor listed as unmodelled."""
    section, _, _ = covered(shared, MI300)
    assert section["modelled_share"] > 0.9
    assert section["mfu_is_floor"] is False
    assert "record_param_comms" not in {u["name"] for u in section["unmodelled"]}


def analyze_text(path: Path) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["analyze", str(path)]) == 0
    return out.getvalue()


def test_the_text_report_says_at_least_and_names_what_is_left_out(shared: Path) -> None:
    resnet = analyze_text(shared / RESNET)
    assert "MFU at least 0.2% of the fp32 peak" in resnet
    assert "FLOPs modelled for 33% of device time" in resnet
    assert "aten::cudnn_convolution_backward_weight" in resnet
    assert "MFU at least" not in analyze_text(shared / QWEN)


def fp32_gemm(time_us: float) -> tuple[str, bytes, OpCost, int, float]:
    """A 4096³ fp32 GEMM's facts: 137 GFLOP, 201 MB a call, one call taking `time_us`."""
    n = 4096
    cost = OpCost(flops=2.0 * n**3, bytes=3.0 * n * n * 4, family="gemm", dtype="fp32")
    key = SEPARATOR.join([b"[[4096,4096],[4096,4096]]", b"", b'["float","float"]', b"[]"])
    return "aten::mm", key, cost, 1, time_us


@pytest.mark.parametrize(
    ("time_us", "note"),
    [(2_000.0, "tf32"), (20_000.0, None)],
)
def test_an_fp32_gemm_faster_than_the_fp32_peak_is_said_to_have_run_in_tf32(
    time_us: float, note: str | None
) -> None:
    peak = match_device("NVIDIA A100-SXM4-80GB")
    assert peak is not None and peak.for_dtype("fp32") == pytest.approx(19.5)
    section = assemble(
        device="NVIDIA A100-SXM4-80GB", peak=peak, steps=1, step_mean_us=time_us * 2,
        facts=[fp32_gemm(time_us)], time_source="device", idle=None,
        unmodelled=[Unmodelled("aten::cat", "not a modelled operator", time_us)],
    )  # fmt: skip
    (row,) = section.ops
    assert row.tflops_s == pytest.approx(2 * 4096**3 / time_us / 1e6)
    assert row.above_roofline == note
    assert (row.roofline_fraction or 0) > 1 if note else (row.roofline_fraction or 0) < 1
    assert section.modelled_share == pytest.approx(0.5)
    assert section.mfu_is_floor is False
