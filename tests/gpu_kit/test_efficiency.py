"""The kit's efficiency checks on recorded values: the jobs' truth lines, read back; the
report's `efficiency` held against them; the group selected apart from the default kit."""

from __future__ import annotations

import importlib
from typing import Any

import pytest
from kit_efficiency import efficiency_checks, truths
from kit_plan import EFFICIENCY_STEPS, STEPS, selected

N = 8192
FLOPS = 2 * N**3
GEMM_LINE = f"KIT-GEMM n={N} dtype=bf16 flops={FLOPS} tflops_s=700.0"
GPT_LINE = (
    "KIT-GPT params=56623104 tokens=8192 layers=8 width=768 seq=1024 "
    "flops_6n=2783138807808 flops_palm=3402688233472"
)


def gemm_report(flops: float, tflops_s: float) -> dict[str, Any]:
    row = {"name": "aten::mm", "input_dims": [[N, N], [N, N]], "input_type": ["c10::BFloat16"] * 2,
           "calls": 32, "flops": flops, "tflops_s": tflops_s}  # fmt: skip
    other = {**row, "input_dims": [[N, 8], [8, N]], "flops": 1.0, "tflops_s": 1.0}
    return {"efficiency": {"ops": [other, row], "mfu": 0.7}}


def passed(found: list[Any]) -> dict[str, bool | None]:
    return {check.name: check.passed for check in found}


def test_the_truth_lines_are_read_among_the_jobs_other_output() -> None:
    text = f"gemm on cuda\n{GEMM_LINE}\nKIT step=10 t_s=1.0 gpu_ms=None window=10\n{GPT_LINE}\n"
    found = truths(text)
    assert found["gemm"] == {"n": N, "dtype": "bf16", "flops": FLOPS, "tflops_s": 700.0}
    assert found["gpt"]["flops_palm"] == 3402688233472 and found["gpt"]["layers"] == 8
    assert truths("KIT step=10 t_s=1.0 gpu_ms=None window=10\n") == {}


def test_the_gemm_counts_exactly_2n3_and_runs_within_10_percent_of_the_benchmark() -> None:
    truth = truths(GEMM_LINE)
    good = efficiency_checks("gemm", "gemm", gemm_report(FLOPS, 650.0), truth, 10.0)
    assert passed(good) == {"GEMM FLOPs": True, "GEMM TFLOP/s": True}
    slow = efficiency_checks("gemm", "gemm", gemm_report(FLOPS, 600.0), truth, 10.0)
    assert passed(slow)["GEMM TFLOP/s"] is False
    miscounted = efficiency_checks("gemm", "gemm", gemm_report(FLOPS + 2, 700.0), truth, 10.0)
    assert passed(miscounted)["GEMM FLOPs"] is False


def test_without_efficiency_or_truth_the_checks_are_not_measured() -> None:
    truth = truths(GEMM_LINE)
    assert set(passed(efficiency_checks("gemm", "gemm", {}, truth, 1.0)).values()) == {None}
    report = gemm_report(FLOPS, 700.0)
    assert set(passed(efficiency_checks("gemm", "gemm", report, {}, 1.0)).values()) == {None}
    assert passed(efficiency_checks("gpt", "gpt", {"efficiency": {}}, truths(GPT_LINE), 2.0)) == {
        "GPT MFU": None
    }


def test_the_gpts_mfu_is_held_against_the_palm_count_over_the_jobs_step_time() -> None:
    steps_per_s, peak = 40.0, 989.4
    truth_mfu = 3402688233472 * steps_per_s / (peak * 1e12)  # 0.1376
    report = {"efficiency": {"mfu": truth_mfu * 1.1, "peak": {"tflops": {"bf16": peak}}}}
    check = efficiency_checks("gpt", "small-gpt", report, truths(GPT_LINE), steps_per_s)[0]
    assert check.passed is True and "6N alone gives 0.1125" in check.figure
    report["efficiency"]["mfu"] = truth_mfu * 1.2
    assert (
        efficiency_checks("gpt", "small-gpt", report, truths(GPT_LINE), steps_per_s)[0].passed
        is False
    )
    ranked = {"ranks": [{"efficiency": {"mfu": truth_mfu, "peak": {"tflops": {"bf16": peak}}}}]}
    assert efficiency_checks("gpt", "small-gpt", ranked, truths(GPT_LINE), steps_per_s)[0].passed


def test_efficiency_is_a_group_of_its_own_outside_the_default_kit() -> None:
    assert selected(None) == STEPS and not set(EFFICIENCY_STEPS) & set(STEPS)
    assert [s.key for s in selected("efficiency")] == ["run:gemm", "run:small-gpt"]
    assert [s.key for s in selected("run:gemm")] == ["run:gemm"]
    assert all(s in STEPS for s in selected("run"))
    assert sum(s.seconds for s in EFFICIENCY_STEPS) + 10 * len(EFFICIENCY_STEPS) <= 120


@pytest.mark.parametrize(("module", "kind"), [("gemm", "gemm"), ("small_gpt", "gpt")])
def test_each_efficiency_job_prints_its_truth_on_the_cpu(
    module: str, kind: str, capsys: pytest.CaptureFixture[str]
) -> None:
    job = importlib.import_module(module)
    job.main(["--device", "cpu", "--scale", "0.02", "--steps", "2", "--every", "2"])
    found = truths(capsys.readouterr().out)[kind]
    if kind == "gemm":
        n = int(found["n"])
        assert found["flops"] == 2 * n**3 and float(found["tflops_s"]) > 0
    else:
        tokens, params = float(found["tokens"]), float(found["params"])
        assert found["flops_6n"] == 6 * params * tokens
        assert float(found["flops_palm"]) > float(found["flops_6n"])
