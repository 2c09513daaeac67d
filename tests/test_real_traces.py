"""Every real trace in ../shared/traces is analysed without error, with a sensible verdict."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import RESNET_NW0, RESNET_NW4, analyze_json

# The verdict each trace should get. Close calls accept every class a reader of the trace could
# defend; traces with too little recorded activity must say "unknown" rather than guess.
VERDICTS: dict[str, set[str]] = {
    RESNET_NW0: {"dataloader"},
    # GPU busy 70%; the host keeps it idle 27% of the step (CPU Exec 16%, Runtime 7.5%), the
    # largest share a fix could recover (docs/verdicts.md).
    RESNET_NW4: {"cpu"},
    # 30 events of a CPU-only gloo rank: almost all of the step is in the collective.
    "hta/cpu_only/rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz": {"communication"},
    # One V100 busy 97% of the step.
    "hta/ns_resolution_trace/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz": {"gpu"},
    # 33 events, nearly every moment unrecorded: too thin for a verdict.
    "hta/trace_compare/base/base.json.gz": {"unknown"},
    # One Triton kernel: nothing to say about a training step.
    "hta/triton_example/triton_example.json.gz": {"unknown"},
    # Kernels 60% of the step, collectives 19%: compute leads, communication is the runner-up.
    "hta/trace_diff/control/control.json.gz": {"gpu", "communication"},
    # Host operators outweigh a GPU busy under a quarter of the time; NCCL is second.
    "hta/nccl_parser_config/nccl_data.json.gz": {"cpu", "communication"},
    "hta/df_index_resolver/df_index_resolver.json.gz": {"cpu", "communication"},
    "hta/trace_filter/sampled_rank-0.json.gz": {"cpu", "communication"},
    "hta/trace_filter/sampled_rank-1.json.gz": {"cpu", "communication"},
    # No step markers, the host spends the span in runtime calls while the GPU is idle.
    "hta/critical_path/alexnet/benchmark_result_2869224_1695835535_trace.json.gz": {
        "cpu",
        "unknown",
    },
    # 220 events of a ROCm toy: launch-dominated, the GPU busy 1% of the step.
    "hta/amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz": {"cpu", "unknown"},
}
CLASSES = {"dataloader", "memcpy", "cpu", "gpu", "communication", "unknown"}


@pytest.mark.parametrize("trace", sorted(VERDICTS))
def test_each_real_trace_is_analysed_with_a_sensible_verdict(shared: Path, trace: str) -> None:
    report = analyze_json(shared / trace)
    assert report["schema"] == "torchtop.report/1"
    assert report["bottleneck"] in VERDICTS[trace], report["verdict"]["reason"]
    assert 0.0 <= report["confidence"] <= 1.0
    assert (report["confidence"] == 0.0) == (report["bottleneck"] == "unknown")
    assert report["steps"]["count"] >= 1
    assert sum(report["breakdown"].values()) == pytest.approx(1.0, abs=0.002)
    for step in report["steps"]["per_step"]:
        assert step["duration_ms"] > 0
        assert sum(step["breakdown"].values()) == pytest.approx(1.0, abs=0.002)
        assert min(step["breakdown"].values()) >= 0.0
    [info] = report["traces"]
    assert info["path"] == str(shared / trace)
    assert info["events"] > 0
    assert not info["truncated"]
    if report["bottleneck"] == "unknown":
        assert report["findings"] == []


def test_a_trace_without_profiler_steps_is_one_step_and_says_so(shared: Path) -> None:
    report = analyze_json(
        shared / "hta/critical_path/alexnet/benchmark_result_2869224_1695835535_trace.json.gz"
    )
    assert report["steps"]["has_markers"] is False
    assert report["steps"]["count"] == 1
    assert report["metrics"]["has_step_markers"] is False
    assert any("ProfilerStep" in note for note in report["notes"])


def test_traces_with_step_markers_do_not_claim_otherwise(shared: Path) -> None:
    report = analyze_json(shared / RESNET_NW0)
    assert report["steps"]["has_markers"] is True
    assert not any("ProfilerStep" in note for note in report["notes"])
    assert [s["step"] for s in report["steps"]["per_step"]] == [5, 6, 7, 8, 9, 10]


def test_a_folder_of_two_ranks_reports_each_rank_and_the_job(shared: Path) -> None:
    report = analyze_json(shared / "hta/trace_filter")
    assert len(report["traces"]) == 2
    ranks = report["ranks"]
    assert len(ranks) == 2
    assert [r["rank"] for r in ranks] == [0, 1]
    assert [r["label"] for r in ranks] == ["rank 0", "rank 1"]
    for rank in ranks:
        assert rank["bottleneck"] in {"cpu", "communication"}
        assert rank["steps"]["count"] == 2
    assert report["bottleneck"] in {"cpu", "communication"}
    assert report["metrics"]["ranks_count"] == 2
    assert report["metrics"]["slowest_rank"] in {"rank 0", "rank 1"}
    # The job's breakdown is the mean of the ranks'.
    for category, share in report["breakdown"].items():
        mean = (ranks[0]["breakdown"][category] + ranks[1]["breakdown"][category]) / 2
        assert share == pytest.approx(mean, abs=1e-3)


def test_a_single_rank_report_has_no_ranks_list(shared: Path) -> None:
    report = analyze_json(shared / RESNET_NW4)
    assert "ranks" not in report


def test_trailing_steps_without_their_device_work_are_dropped_with_a_note(shared: Path) -> None:
    report = analyze_json(shared / "hta/amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz")
    assert any(note.startswith("dropped the last") for note in report["notes"])
