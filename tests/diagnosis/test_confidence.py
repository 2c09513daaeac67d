"""Confidence: the chance that much more evidence of the same job keeps the verdict, computed
from the margin to the next decision and the number of evidence units, the same in every mode."""

from __future__ import annotations

import pytest

from tests.conftest import RULES_DIR
from torchtop.diagnosis.confidence import student_t_cdf
from torchtop.diagnosis.engine import diagnose
from torchtop.diagnosis.rules import load_rules
from torchtop.model.analysis import Metrics, MetricValue, StepCost

SHIPPED = load_rules(RULES_DIR)
CATEGORIES = ("kernel", "memcpy", "memset", "communication", "runtime", "dataloader", "cpu_exec")


def cpu_job(**overrides: MetricValue) -> Metrics:
    """A CPU-only job: the math fills the step but for 5% of DataLoader wait and 3% of Python
    between operators (a cpu stall: the same class as the work, so it cannot change the verdict)."""
    metrics: Metrics = {
        "has_gpu": False,
        "gpu_utilization": None,
        **{f"{c}_share": 0.0 for c in CATEGORIES},
        "cpu_exec_share": 0.92,
        "dataloader_share": 0.05,
        "other_share": 0.03,
    }
    metrics.update(overrides)
    return metrics


def attached(samples: int, **shares: MetricValue) -> Metrics:
    """What `assess/attached.py` hands the engine: shares of stack samples, no step markers."""
    return cpu_job(steps_count=samples, stack_samples=samples, has_step_markers=False, **shares)


def run(steps: int, **shares: MetricValue) -> Metrics:
    return cpu_job(steps_count=steps, has_step_markers=True, **shares)


def steps_of(waits: list[float]) -> list[StepCost]:
    """Steps of 100 ms whose DataLoader wait is each of `waits` (shares), Python 3%."""
    return [
        StepCost(
            i, i * 1e5, 1e5, {"cpu_exec": (0.97 - w) * 1e5, "dataloader": w * 1e5, "other": 0.03e5}
        )
        for i, w in enumerate(waits)
    ]


def test_more_samples_of_the_same_shares_give_a_higher_confidence() -> None:
    few, some, many = (diagnose(SHIPPED, attached(n)) for n in (5, 20, 60))
    assert few.bottleneck == some.bottleneck == many.bottleneck == "cpu"
    assert 0.5 < few.confidence < some.confidence < many.confidence <= 1.0


def test_more_steps_of_the_same_spread_give_a_higher_confidence() -> None:
    spread = [0.05, 0.08, 0.03, 0.07, 0.02]
    few = diagnose(SHIPPED, run(3), steps_of(spread[:3]))
    many = diagnose(SHIPPED, run(20), steps_of(spread * 4))
    assert few.bottleneck == many.bottleneck == "cpu"
    assert few.confidence < many.confidence


def test_a_margin_near_the_boundary_is_near_a_coin_toss() -> None:
    # DataLoader wait at 9.8%: just under the 10% that would make it the verdict.
    near = {"cpu_exec_share": 0.872, "dataloader_share": 0.098}
    near_samples = diagnose(SHIPPED, attached(60, **near))
    near_steps = diagnose(SHIPPED, run(10, **near), steps_of([0.05, 0.146] * 5))
    python_near = {"cpu_exec_share": 0.88, "dataloader_share": 0.0, "other_share": 0.12}
    same_class = diagnose(SHIPPED, attached(60, **python_near))
    far = diagnose(SHIPPED, attached(60, cpu_exec_share=0.97, dataloader_share=0.0))
    assert near_samples.bottleneck == near_steps.bottleneck == far.bottleneck == "cpu"
    assert near_samples.confidence < 0.65
    assert near_steps.confidence < 0.65
    assert far.confidence > 0.95
    # Python between operators near 10% is a cpu stall: crossing 10% keeps the verdict cpu.
    assert same_class.bottleneck == "cpu"
    assert same_class.confidence > 0.95


def test_the_same_shares_and_the_same_count_give_the_same_confidence_in_every_mode() -> None:
    for count, shares in ((8, {}), (30, {"cpu_exec_share": 0.8, "dataloader_share": 0.17})):
        by_samples = diagnose(SHIPPED, attached(count, **shares))
        by_steps = diagnose(SHIPPED, run(count, **shares))
        assert by_samples.bottleneck == by_steps.bottleneck
        assert by_samples.confidence == by_steps.confidence


def test_steps_that_vary_little_are_worth_more_than_as_many_samples() -> None:
    """A step is a measured split, not one look: its spread is measured, and small."""
    steady = diagnose(SHIPPED, run(4), steps_of([0.05, 0.051, 0.049, 0.05]))
    glances = diagnose(SHIPPED, run(4))
    assert steady.bottleneck == glances.bottleneck == "cpu"
    assert glances.confidence < steady.confidence
    assert steady.confidence > 0.95


def test_a_stall_against_a_close_runner_up_reads_both_shares() -> None:
    # DataLoader 40% against Python 35% on a GPU job: both above the threshold, 5 points apart.
    close = cpu_job(has_gpu=True, gpu_utilization=0.25, kernel_share=0.25, cpu_exec_share=0.0,
                    dataloader_share=0.4, other_share=0.35)  # fmt: skip
    few, many = (
        diagnose(SHIPPED, {**close, "steps_count": 10}),
        diagnose(SHIPPED, {**close, "steps_count": 2000}),
    )
    assert few.bottleneck == many.bottleneck == "dataloader"
    assert 0.5 <= few.confidence < 0.7 < many.confidence


@pytest.mark.parametrize(
    ("t", "dof", "expected"),
    # Student's t table values (two-sided 90%, 95%, 99% points) and the Cauchy's closed form.
    [(2.353, 3, 0.95), (2.776, 4, 0.975), (2.845, 20, 0.995), (1.0, 1, 0.75), (-1.0, 1, 0.25)],
)
def test_the_t_distribution_matches_its_table(t: float, dof: int, expected: float) -> None:
    assert student_t_cdf(t, dof) == pytest.approx(expected, abs=5e-4)
