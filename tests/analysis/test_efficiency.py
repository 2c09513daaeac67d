"""The report's `efficiency`: modelled FLOPs per step, MFU and operators on the roofline, held
against TraceLens's perf model on the shared traces and against the report's own figures."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import analyze_json
from torchtop.analysis.efficiency import pooled, trace_efficiency, with_peak
from torchtop.analysis.op_cost import op_cost
from torchtop.analysis.peaks import match_device_info
from torchtop.analysis.steps import find_steps
from torchtop.model.peak import MEASURED, Peak
from torchtop.traces import read_trace

SHAPED = [
    "tracelens/h100/Falconsai_nsfw_image_detection__1016002.json.gz",
    "tracelens/h100/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz",
    "tracelens/h100/facebook_timesformer-base-finetuned-k400__1016002.json.gz",
    "tracelens/h100/gaunernst_bert-small-uncased__1016001.json.gz",
    "tracelens/h100/google_owlv2-large-patch14-ensemble__1016001.json.gz",
    "tracelens/b200/eager_trace.json.gz",
    "tracelens/mi300/resnet_act_checkpoint.json.gz",
]
ORACLE = Path(__file__).resolve().parents[2].parent / "shared/oracles/tracelens-171dd747"
ADDMM_DIMS = [[16], [8, 32], [32, 16], [], []]
ADDMM_TYPES = ["float", "float", "float", "Scalar", "Scalar"]
ADDMM_CONCRETE = ["", "", "", "1", "1"]


@pytest.mark.parametrize("name", SHAPED)
def test_mfu_is_the_reports_flops_per_step_over_its_step_time_and_the_table_peak(
    shared: Path, name: str
) -> None:
    report = analyze_json(shared / name)
    section = report["efficiency"]
    ops = section["ops"]
    by_dtype: dict[str | None, float] = defaultdict(float)
    for op in ops:
        by_dtype[op["dtype"]] += op["flops"] * op["calls"]
    flops_per_step = sum(by_dtype.values()) / report["steps"]["count"]
    assert section["steps"] == report["steps"]["count"]
    assert section["flops_per_step"] == pytest.approx(flops_per_step, rel=1e-9)
    dtype = max(by_dtype, key=lambda d: by_dtype[d])
    assert section["mfu_dtype"] == dtype
    peak = match_device_info(read_trace(shared / name).devices[0])
    assert peak is not None and dtype is not None
    seconds = report["steps"]["mean_ms"] / 1e3
    mfu = flops_per_step / seconds / (peak.tflops[dtype] * 1e12)
    assert section["mfu"] == pytest.approx(mfu, rel=1e-4)
    assert 0 < section["mfu"] <= 1
    assert section["peak"]["tflops"][dtype] == peak.tflops[dtype]
    assert set(section["idle"]) == {"host_wait", "kernel_wait", "other"}
    assert 0 < sum(section["idle"].values()) < 1


def test_a_gpu_the_peak_table_cannot_name_gets_the_operators_but_no_mfu(shared: Path) -> None:
    """HTA's sampled ranks write no deviceProperties: the figures stand, MFU and bounds do not."""
    section = analyze_json(shared / "hta/trace_filter/sampled_rank-0.json.gz")["efficiency"]
    assert section["device"] == "unknown GPU" and section["peak"] is None
    assert section["mfu"] is None and section["flops_per_step"] > 0
    assert all(o["bound"] is None and o["roofline_fraction"] is None for o in section["ops"])
    assert any(o["tflops_s"] for o in section["ops"])


def _shape_key(dims: object) -> str:
    """TraceLens prints the trace's lists as Python tuples: `((512,), (141, 512), ())`."""
    if isinstance(dims, list):
        return repr(tuple(tuple(d) if isinstance(d, list) else d for d in dims))
    return str(dims)


@pytest.mark.parametrize("name", SHAPED)
def test_gemm_calls_and_kernel_time_agree_with_tracelens(shared: Path, name: str) -> None:
    """TraceLens's rows split one shape by strides and concrete inputs; added up per name, dims
    and types they are this report's rows."""
    if not (ORACLE / "perf_model.json").is_file():
        pytest.skip("TraceLens oracle not found beside the checkout")
    oracle = json.loads((ORACLE / "perf_model.json").read_text())[name]["ops"]
    expected: dict[tuple[str, str, str], list[float]] = defaultdict(lambda: [0.0, 0.0])
    for row in oracle:
        if row["category"] == "GEMM":
            totals = expected[row["name"], row["input_dims"], row["input_type"]]
            totals[0] += row["calls"]
            totals[1] += row["kernel_time_us_sum"]
    mine = {
        (o["name"], _shape_key(o["input_dims"]), _shape_key(o["input_type"])): o
        for o in analyze_json(shared / name)["efficiency"]["ops"]
    }
    assert expected
    for key, (calls, time_us) in expected.items():
        assert key in mine, key
        assert mine[key]["calls"] == calls, key
        assert mine[key]["time_us"] == pytest.approx(time_us, rel=0.03), key


@pytest.mark.parametrize(
    "name",
    [
        "hta/nccl_parser_config/nccl_data.json.gz",
        "hta/critical_path/alexnet/benchmark_result_2869224_1695835535_trace.json.gz",
    ],
)
def test_a_trace_recorded_without_shapes_has_no_efficiency(shared: Path, name: str) -> None:
    report = analyze_json(shared / name)
    assert "efficiency" not in report
    assert all("efficiency" not in rank for rank in report.get("ranks", []))


def linear_step(rank: int, kernel_us: float) -> dict[str, Any]:
    """One step of aten::linear calling aten::addmm, which launches one kernel; a second
    launch outside any modelled operator; an aten::addmm outside the step."""
    addmm = {"Input Dims": ADDMM_DIMS, "Input type": ADDMM_TYPES, "Concrete Inputs": ADDMM_CONCRETE}
    linear = {"Input Dims": [[8, 32], [16, 32], [16]], "Input type": ["float"] * 3}
    events = [
        {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1,
         "ts": 1000, "dur": 500},
        {"ph": "X", "cat": "cpu_op", "name": "aten::linear", "pid": 1, "tid": 1, "ts": 1010,
         "dur": 100, "args": linear},
        {"ph": "X", "cat": "cpu_op", "name": "aten::addmm", "pid": 1, "tid": 1, "ts": 1020,
         "dur": 80, "args": addmm},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
         "ts": 1030, "dur": 5, "args": {"correlation": 7}},
        {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 1100,
         "dur": kernel_us, "args": {"correlation": 7, "device": 0}},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
         "ts": 1200, "dur": 5, "args": {"correlation": 8}},
        {"ph": "X", "cat": "kernel", "name": "other", "pid": 0, "tid": 7, "ts": 1210,
         "dur": 50, "args": {"correlation": 8, "device": 0}},
        {"ph": "X", "cat": "cpu_op", "name": "aten::addmm", "pid": 1, "tid": 1, "ts": 3000,
         "dur": 80, "args": addmm},
    ]  # fmt: skip
    return {"distributedInfo": {"rank": rank, "world_size": 2}, "traceEvents": events}


def test_only_the_innermost_modelled_operator_counts_with_its_kernels_time(
    tmp_path: Path,
) -> None:
    path = tmp_path / "t.json"
    path.write_text(json.dumps(linear_step(0, 40.0)))
    trace = read_trace(path)
    steps = find_steps(trace)
    section = trace_efficiency(trace, steps, 500.0)
    assert section is not None and section.time_source == "device"
    [row] = section.ops  # aten::linear holds the addmm; the addmm after the step is not in it
    cost = op_cost("aten::addmm", ADDMM_DIMS, ADDMM_TYPES, ADDMM_CONCRETE)
    assert cost is not None
    assert (row.name, row.calls, row.time_us) == ("aten::addmm", 1, 40.0)
    assert row.flops == cost.flops == 2 * 8 * 16 * 32 + 8 * 16
    assert section.flops_per_step == cost.flops
    assert row.tflops_s == pytest.approx(cost.flops / 40e-6 / 1e12)
    assert section.peak is None and section.mfu is None and row.bound is None


def test_a_job_pools_its_ranks_calls_and_time_and_keeps_flops_per_step_per_rank(
    tmp_path: Path,
) -> None:
    sections = []
    for rank, kernel_us in ((0, 40.0), (1, 60.0)):
        path = tmp_path / f"rank{rank}.json"
        path.write_text(json.dumps(linear_step(rank, kernel_us)))
        trace = read_trace(path)
        sections.append(trace_efficiency(trace, find_steps(trace), 500.0))
    job = pooled(sections)
    assert job is not None and sections[0] is not None
    [row] = job.ops
    assert (row.calls, row.time_us, job.steps) == (2, 100.0, 2)
    assert job.flops_per_step == sections[0].flops_per_step
    report = analyze_json(tmp_path)
    assert [r["efficiency"]["ops"][0]["time_us"] for r in report["ranks"]] == [40.0, 60.0]
    assert report["efficiency"]["ops"][0]["calls"] == 2


def test_another_peak_gives_the_same_operators_new_bounds_and_mfu(tmp_path: Path) -> None:
    path = tmp_path / "t.json"
    path.write_text(json.dumps(linear_step(0, 40.0)))
    trace = read_trace(path)
    section = trace_efficiency(trace, find_steps(trace), 500.0)
    assert section is not None
    peak = Peak(device="a CPU", tflops={"fp32": 1e-6}, tb_s=1e-6, source=MEASURED)
    held = with_peak(section, peak)
    assert held.peak == peak and held.ops[0].calls == section.ops[0].calls
    assert held.mfu == pytest.approx(section.flops_per_step / 500e-6 / 1e6)
    intensity = section.ops[0].flops / section.ops[0].bytes
    assert held.ops[0].bound == ("compute" if intensity >= 1.0 else "memory")
