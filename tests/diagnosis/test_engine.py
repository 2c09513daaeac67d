"""The engine: walking the tree parent first, findings, and the verdict with its confidence."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tests.conftest import RULES_DIR
from torchtop.diagnosis.engine import diagnose, fired_rules, render
from torchtop.diagnosis.rules import load_rules
from torchtop.model.analysis import Metrics, MetricValue

SHIPPED = load_rules(RULES_DIR)


def gpu_job(**overrides: MetricValue) -> Metrics:
    """Metrics of a GPU job, five steps; shares add up to 1 with the defaults."""
    metrics: Metrics = {
        "steps_count": 5,
        "has_gpu": True,
        "has_step_markers": True,
        "kernel_share": 0.3,
        "memcpy_share": 0.0,
        "memset_share": 0.0,
        "communication_share": 0.0,
        "runtime_share": 0.0,
        "dataloader_share": 0.4,
        "cpu_exec_share": 0.1,
        "other_share": 0.2,
        "gpu_utilization": 0.3,
    }
    metrics.update(overrides)
    return metrics


def tree_with(tmp_path: Path, root_when: str, child_when: str) -> Path:
    folder = tmp_path / "rules"
    folder.mkdir()
    (folder / "cpu.toml").write_text(
        textwrap.dedent(
            f"""
            id = "cpu"
            class = "cpu"
            title = "Host"
            when = "{root_when}"
            recoverable = "cpu_exec_share"
            why = "Source: test."
            """
        )
    )
    (folder / "sync-in-loop.toml").write_text(
        textwrap.dedent(
            f"""
            id = "sync-in-loop"
            parent = "cpu"
            title = "Syncs"
            when = "{child_when}"
            why = "Source: test."
            """
        )
    )
    return folder


def test_child_rule_is_checked_only_when_its_parent_matched(tmp_path: Path) -> None:
    tree = load_rules(tree_with(tmp_path, "steps_count > 0", "sync_share > 0.05"))
    child_holds = {"sync_share": 0.5}
    assert tree.rules["sync-in-loop"].when.holds(child_holds)
    assert fired_rules(tree, {**child_holds, "steps_count": 0}) == []
    assert fired_rules(tree, {**child_holds, "steps_count": 3}) == ["cpu", "sync-in-loop"]
    # A parent that is unknown (metric missing) does not open its children either.
    assert fired_rules(tree, child_holds) == []


def test_parents_come_before_their_children_in_the_fired_list() -> None:
    fired = fired_rules(SHIPPED, gpu_job())
    for rule_id in fired:
        parent = SHIPPED.rules[rule_id].parent
        if parent is not None:
            assert parent in fired
            assert fired.index(parent) < fired.index(rule_id)


def test_the_verdict_is_the_stall_that_could_recover_the_most_of_the_step() -> None:
    verdict = diagnose(SHIPPED, gpu_job())
    assert verdict.bottleneck == "dataloader"
    assert verdict.scores["dataloader"] == pytest.approx(0.4)
    assert verdict.scores["cpu"] == pytest.approx(0.3)
    assert verdict.predicted_gain == pytest.approx(1 / 0.6, abs=0.01)
    assert "dataloader" in verdict.reason
    assert verdict.findings[0].rule == "dataloader-starved"
    assert verdict.findings[0].chain == ("dataloader", "dataloader-starved")
    assert verdict.findings[0].severity == "high"  # dataloader_share > 0.3


def test_findings_are_the_deepest_rules_that_held_never_the_roots() -> None:
    verdict = diagnose(SHIPPED, gpu_job())
    rules = [f.rule for f in verdict.findings]
    assert rules
    assert not {r.id for r in SHIPPED.roots} & set(rules)
    fired = fired_rules(SHIPPED, gpu_job())
    for rule in rules:
        assert not set(SHIPPED.children.get(rule, ())) & set(fired)


def test_the_verdict_is_unknown_without_a_step() -> None:
    verdict = diagnose(SHIPPED, gpu_job(steps_count=0))
    assert verdict.bottleneck == "unknown"
    assert verdict.confidence == 0.0
    assert verdict.findings == ()
    assert "step" in verdict.reason


@pytest.mark.parametrize("other", [0.8, 0.95])
def test_the_verdict_is_unknown_when_most_of_the_step_is_unrecorded(other: float) -> None:
    metrics = gpu_job(
        other_share=other, dataloader_share=(1 - other) / 2, kernel_share=(1 - other) / 2
    )
    verdict = diagnose(SHIPPED, metrics)
    assert verdict.bottleneck == "unknown"
    assert verdict.confidence == 0.0
    assert verdict.findings == ()


def test_just_under_the_unrecorded_threshold_there_is_a_verdict() -> None:
    verdict = diagnose(SHIPPED, gpu_job(other_share=0.79, kernel_share=0.01, cpu_exec_share=0.0))
    assert verdict.bottleneck != "unknown"


def test_confidence_is_lower_when_the_runner_up_class_is_close() -> None:
    clear = diagnose(
        SHIPPED,
        gpu_job(dataloader_share=0.5, cpu_exec_share=0.05, other_share=0.05, kernel_share=0.4),
    )
    close = diagnose(
        SHIPPED,
        gpu_job(dataloader_share=0.4, cpu_exec_share=0.3, other_share=0.05, kernel_share=0.25),
    )
    assert clear.bottleneck == close.bottleneck == "dataloader"
    assert 0 < close.confidence < clear.confidence <= 1


def test_confidence_is_lower_with_fewer_steps_or_from_a_truncated_file() -> None:
    many = diagnose(SHIPPED, gpu_job())
    one = diagnose(SHIPPED, gpu_job(steps_count=1))
    unmarked = diagnose(SHIPPED, gpu_job(has_step_markers=False))
    truncated = diagnose(SHIPPED, gpu_job(trace_truncated=True))
    assert one.bottleneck == unmarked.bottleneck == truncated.bottleneck == many.bottleneck
    assert one.confidence < many.confidence
    assert truncated.confidence < many.confidence
    # Markers say how steps were found, not how many looks at the job there were: the count
    # of evidence units does (a job attached without an agent has no markers, and samples).
    assert unmarked.confidence == many.confidence


def test_messages_render_metrics_and_print_missing_ones_as_n_a() -> None:
    assert render("{a:.0%} of the step", {"a": 0.334}) == "33% of the step"
    assert render("{a:.0%} then {b:.1f}", {"a": 0.5}) == "50% then n/a"
    assert render("{a:.1f}", {"a": None}) == "n/a"


def cpu_job(**overrides: MetricValue) -> Metrics:
    """Metrics of a CPU-only job whose operators fill the step (no stall past the threshold)."""
    metrics: Metrics = {
        "steps_count": 20,
        "has_gpu": False,
        "has_step_markers": True,
        "kernel_share": 0.0,
        "memcpy_share": 0.0,
        "memset_share": 0.0,
        "communication_share": 0.0,
        "runtime_share": 0.0,
        "dataloader_share": 0.01,
        "cpu_exec_share": 0.95,
        "other_share": 0.04,
        "torch_num_threads": 2,
        "rank_cores": 2,
    }
    metrics.update(overrides)
    return metrics


def test_a_cpu_job_alone_is_filled_by_its_work() -> None:
    verdict = diagnose(SHIPPED, cpu_job())
    assert verdict.bottleneck == "cpu"
    assert "the cpu work itself fills it" in verdict.reason


def test_a_contended_cpu_job_s_verdict_says_other_processes_take_its_cores() -> None:
    contended = cpu_job(
        contender_cores=1.6,
        other_cores_used=1.7,
        contenders="pid 4242 (python -c while True: pass): 0.81 cores",
        runqueue_wait_share=0.52,
    )
    verdict = diagnose(SHIPPED, contended)
    assert verdict.bottleneck == "cpu"
    assert "itself fills it" not in verdict.reason
    assert "other processes take the cores the job runs on" in verdict.reason
    assert "cpu-contention: 52% of its time lost" in verdict.reason
