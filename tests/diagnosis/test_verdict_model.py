"""The verdict's model on the shipped rules: recoverable shares, gain bounds, the threshold
between a stall and the job's work, and what confidence means."""

from __future__ import annotations

import pytest

from tests.conftest import RULES_DIR
from tests.diagnosis.test_engine import gpu_job
from torchtop.diagnosis.engine import diagnose
from torchtop.diagnosis.rules import load_rules
from torchtop.model.analysis import Metrics, MetricValue
from torchtop.model.findings import gain_bound, gain_text

SHIPPED = load_rules(RULES_DIR)
THRESHOLD = SHIPPED.settings.min_recoverable_share


def busy_gpu(stall: str, share: float, **more: MetricValue) -> Metrics:
    """A GPU job whose kernels fill the step except `share` of one stall category."""
    quiet = {"dataloader_share": 0.0, "cpu_exec_share": 0.0, "other_share": 0.0}
    return gpu_job(**{**quiet, "kernel_share": 1.0 - share, stall: share, **more})


def cpu_job(**shares: MetricValue) -> Metrics:
    """A CPU-only job of five steps: the math 90%, Python between operators 10%."""
    cpu_only: dict[str, MetricValue] = {"has_gpu": False, "kernel_share": 0.0,
                                        "dataloader_share": 0.0, "cpu_exec_share": 0.9,
                                        "other_share": 0.1, "gpu_utilization": None}  # fmt: skip
    return gpu_job(**{**cpu_only, **shares})


def test_the_gain_bound_is_amdahls_and_capped_short_of_infinity() -> None:
    assert gain_bound(0.5) == 2.0
    assert gain_bound(0.0) == 1.0
    assert gain_bound(1.0) == 100.0
    assert gain_bound(None) is None


@pytest.mark.parametrize(
    ("stall", "verdict"),
    [
        ("dataloader_share", "dataloader"),
        ("memcpy_share", "memcpy"),
        ("communication_share", "communication"),
        ("cpu_exec_share", "cpu"),
        ("runtime_share", "cpu"),
    ],
)
def test_a_busy_gpu_is_the_verdict_until_one_stall_could_recover_the_threshold(
    stall: str, verdict: str
) -> None:
    below = diagnose(SHIPPED, busy_gpu(stall, THRESHOLD - 0.02))
    above = diagnose(SHIPPED, busy_gpu(stall, THRESHOLD + 0.02))
    assert below.bottleneck == "gpu"
    assert above.bottleneck == verdict
    assert above.predicted_gain == gain_bound(THRESHOLD + 0.02)
    assert f"{THRESHOLD:.0%}" in below.reason


def test_a_gpu_idle_a_third_of_the_step_on_the_dataloader_is_bound_by_it_not_by_its_kernels() -> (
    None
):
    # The kineto-tb-plugin-early ResNet-50 with num_workers=0: kernels 68%, DataLoader 21%.
    metrics = gpu_job(kernel_share=0.68, dataloader_share=0.21, cpu_exec_share=0.07,
                      other_share=0.04, gpu_utilization=0.68)  # fmt: skip
    verdict = diagnose(SHIPPED, metrics)
    assert verdict.bottleneck == "dataloader"
    assert verdict.predicted_gain == pytest.approx(1.27, abs=0.01)


def test_on_a_cpu_only_job_the_math_is_the_work_and_copies_are_a_stall() -> None:
    healthy = diagnose(SHIPPED, cpu_job())
    assert healthy.bottleneck == "cpu"
    # What a cpu fix recovers for sure there is the time between operators, not the math.
    assert healthy.recoverable["cpu"] == pytest.approx(0.1)
    assert healthy.recoverable["gpu"] is None
    copies = diagnose(SHIPPED, cpu_job(memcpy_share=0.5, cpu_exec_share=0.45, other_share=0.05))
    assert copies.bottleneck == "memcpy"
    assert copies.predicted_gain == 2.0


def test_every_finding_carries_its_class_gain_unless_its_rule_recovers_only_part() -> None:
    metrics = gpu_job(kernel_share=0.2, dataloader_share=0.1, cpu_exec_share=0.3,
                      other_share=0.4, gpu_utilization=0.2)  # fmt: skip
    verdict = diagnose(SHIPPED, metrics)
    assert verdict.bottleneck == "cpu"
    by_rule = {f.rule: f for f in verdict.findings}
    assert by_rule["dataloader-starved"].predicted_gain == gain_bound(0.1)
    # python-overhead's fix (fewer, fused operators) recovers the Other share only.
    assert by_rule["python-overhead"].predicted_gain == gain_bound(0.4)
    assert by_rule["gpu-waits-on-host"].predicted_gain == gain_bound(0.7)
    assert (
        gain_text(by_rule["python-overhead"])
        == "predicted 1.67x faster if its 40% of the step were recovered and nothing else changed"
    )


def test_the_gpu_class_predicts_from_tensor_core_eligible_time_only_where_it_is_measured() -> None:
    unknown = diagnose(SHIPPED, busy_gpu("cpu_exec_share", 0.03, gpu_utilization=0.97))
    assert unknown.bottleneck == "gpu"
    assert unknown.predicted_gain is None
    [busy] = [f for f in unknown.findings if f.rule == "gpu-busy"]
    assert busy.predicted_gain is None
    assert "no model" in gain_text(busy)
    volta = busy_gpu("cpu_exec_share", 0.03, gpu_utilization=0.97, compute_capability=7.0,
                     tc_eligible_share=0.6, tc_used_share=0.1)  # fmt: skip
    assert diagnose(SHIPPED, volta).recoverable["gpu"] == pytest.approx(0.97 * 0.5)
    pascal = {**volta, "compute_capability": 6.1}
    assert diagnose(SHIPPED, pascal).predicted_gain == 1.0


def test_confidence_is_a_coin_toss_at_the_threshold_and_grows_with_the_margin() -> None:
    at = diagnose(SHIPPED, busy_gpu("dataloader_share", THRESHOLD))
    far = diagnose(SHIPPED, busy_gpu("dataloader_share", 0.8))
    # No stall seen in 100 looks at the job: nothing is near the threshold.
    clear_gpu = diagnose(SHIPPED, busy_gpu("dataloader_share", 0.0, steps_count=100))
    assert at.bottleneck == "dataloader"
    assert at.confidence == pytest.approx(0.5)
    assert far.confidence > 0.9
    assert clear_gpu.bottleneck == "gpu"
    assert clear_gpu.confidence == 1.0


def test_confidence_falls_as_the_runner_up_stall_nears_the_top_one() -> None:
    apart = diagnose(SHIPPED, gpu_job(kernel_share=0.3, dataloader_share=0.5, cpu_exec_share=0.1,
                                      other_share=0.1))  # fmt: skip
    close = diagnose(SHIPPED, gpu_job(kernel_share=0.3, dataloader_share=0.36, cpu_exec_share=0.24,
                                      other_share=0.1))  # fmt: skip
    assert apart.bottleneck == close.bottleneck == "dataloader"
    assert 0.5 <= close.confidence < apart.confidence <= 1.0


def test_with_the_device_unknown_and_no_stall_there_is_no_verdict() -> None:
    metrics = cpu_job(has_gpu=None)
    verdict = diagnose(SHIPPED, metrics)
    assert verdict.bottleneck == "unknown"
    assert "gpu" in verdict.reason.lower()


def test_a_job_whose_stalls_were_not_measured_is_not_called_bound_by_its_work() -> None:
    # Step timing alone (no profiler window): only the DataLoader wait is known.
    metrics: Metrics = {"steps_count": 20, "has_gpu": False, "dataloader_share": 0.01}
    verdict = diagnose(SHIPPED, metrics)
    assert verdict.bottleneck == "unknown"
    assert "memcpy" in verdict.reason
    assert "not measured" in verdict.reason


def test_a_thread_fix_on_cpu_math_claims_no_gain_the_breakdown_cannot_bound() -> None:
    verdict = diagnose(SHIPPED, cpu_job())
    [math] = [f for f in verdict.findings if f.rule == "cpu-math-bound"]
    assert math.predicted_gain is None
    assert "no model" in gain_text(math)


def test_a_cpu_loop_that_is_mostly_python_is_bound_by_that_not_by_a_small_copy() -> None:
    verdict = diagnose(SHIPPED, cpu_job(memcpy_share=0.12, cpu_exec_share=0.28, other_share=0.6))
    assert verdict.bottleneck == "cpu"
    assert verdict.predicted_gain == gain_bound(0.6)
    assert "memcpy at 12%" in verdict.reason


def test_the_gpu_classs_amp_bound_never_outbids_a_stall_for_the_verdict() -> None:
    # The kineto-tb-plugin ResNet-50 with num_workers=0: AMP's bound (38% of the step) is
    # larger than the DataLoader's 33%, but the GPU idles that 33%: the DataLoader bounds it.
    metrics = gpu_job(kernel_share=0.56, dataloader_share=0.33, cpu_exec_share=0.08,
                      other_share=0.03, gpu_utilization=0.56, compute_capability=7.0,
                      tc_eligible_share=0.68, tc_used_share=0.0)  # fmt: skip
    verdict = diagnose(SHIPPED, metrics)
    assert verdict.recoverable["gpu"] == pytest.approx(0.56 * 0.68)
    assert verdict.bottleneck == "dataloader"


def test_the_rules_command_shows_what_each_rule_recovers() -> None:
    from torchtop.diagnosis.describe import describe_rule

    assert "recovers  dataloader_share" in describe_rule(SHIPPED, "dataloader")
    assert "work when has_gpu" in describe_rule(SHIPPED, "gpu")
    assert "recovers  no model" in describe_rule(SHIPPED, "gpu-busy")
