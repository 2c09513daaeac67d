"""The job seen through its ranks: one `job_analysis` for traces and live runs, whose keywords
carry their only differences."""

from __future__ import annotations

import pytest

from torchtop.analysis.breakdown import CATEGORIES
from torchtop.analysis.summary import job_analysis
from torchtop.model.analysis import Metrics, RankAnalysis, StepCost
from torchtop.model.trace import TraceInfo


def rank(
    number: int,
    step_ms: float,
    dataloader_share: float,
    listed_steps: int = 4,
    counted_steps: int = 4,
    profiled: bool = True,
) -> RankAnalysis:
    breakdown = {c: 0.0 for c in CATEGORIES}
    breakdown.update(dataloader=dataloader_share, kernel=1.0 - dataloader_share)
    metrics: Metrics = {
        "step_mean_ms": step_ms,
        "steps_count": counted_steps,
        "dataloader_share": dataloader_share,
    }
    steps = tuple(StepCost(n, n * step_ms * 1000, step_ms * 1000, {}) for n in range(listed_steps))
    return RankAnalysis(
        rank=number,
        label=f"rank {number}",
        infos=(TraceInfo(f"rank{number}.json", rank=number),) if profiled else (),
        devices=(),
        steps=steps,
        breakdown=breakdown,
        metrics=metrics,
        notes=(f"note of rank {number}", "shared note"),
    )


def test_one_rank_is_the_job_itself() -> None:
    only = rank(0, 100.0, 0.5)
    assert job_analysis([only]) is only


def test_the_job_has_the_mean_breakdown_the_spread_and_the_slowest_ranks_steps() -> None:
    fast, slow = rank(0, 100.0, 0.2, listed_steps=5), rank(1, 150.0, 0.4, listed_steps=3)
    job = job_analysis([fast, slow])
    assert job.rank is None and job.label == "2 ranks"
    assert job.breakdown["dataloader"] == pytest.approx(0.3)
    assert job.breakdown["kernel"] == pytest.approx(0.7)
    assert job.metrics["kernel_share"] == pytest.approx(0.7)
    assert job.metrics["step_mean_ms"] == pytest.approx(125.0)
    assert job.metrics["slowest_rank"] == "rank 1"
    assert job.metrics["rank_step_spread"] == pytest.approx(50.0 / 125.0)
    assert job.steps == slow.steps


def test_steps_are_counted_in_each_ranks_step_list_or_as_its_metrics_report_them() -> None:
    ranks = [
        rank(0, 100.0, 0.2, listed_steps=5, counted_steps=30),
        rank(1, 150.0, 0.4, listed_steps=3, counted_steps=20),
    ]
    assert job_analysis(ranks).metrics["steps_count"] == 3
    assert job_analysis(ranks, steps_count_from="metrics").metrics["steps_count"] == 20


def test_shares_a_job_did_not_measure_stay_out_of_its_metrics() -> None:
    ranks = [rank(0, 100.0, 0.2, profiled=False), rank(1, 150.0, 0.4)]
    job = job_analysis(ranks, shares_measured=False)
    assert "kernel_share" not in job.metrics
    assert job.metrics["dataloader_share"] == pytest.approx(0.3), "the ranks' own metric"
    assert job.breakdown["kernel"] == pytest.approx(0.7)


def test_the_job_names_every_ranks_sources_or_only_the_slowest_ranks() -> None:
    ranks = [rank(0, 100.0, 0.2), rank(1, 150.0, 0.4)]
    pooled = job_analysis(ranks)
    assert [i.path for i in pooled.infos] == ["rank0.json", "rank1.json"]
    assert pooled.notes == ("note of rank 0", "shared note", "note of rank 1")
    slowest = job_analysis(ranks, pool_sources=False)
    assert [i.path for i in slowest.infos] == ["rank1.json"]
    assert slowest.notes == ("note of rank 1", "shared note")
