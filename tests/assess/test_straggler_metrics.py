"""The rank-straggler finding follows the straggler judgement (`assess.straggler_metrics`).

Live, planted run folders go through `assess`: the finding fires exactly where a rank's standing
says straggler, with its margin, its blocks and what its peers wait on it as the recoverable
share. Offline, the profiled steps' mean step times decide under `[ranks]`' thresholds.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import msgspec
import pytest

from tests.conftest import CONTEXT
from tests.fake_run import FakeRun
from torchtop.analysis.summary import analyze_trace
from torchtop.assess.run import assess
from torchtop.assess.straggler_metrics import judged_metrics, profiled_metrics
from torchtop.diagnosis.engine import diagnose
from torchtop.diagnosis.rules import load_rules
from torchtop.diagnosis.schema import RankPolicy
from torchtop.model.analysis import Metrics, RankAnalysis, StepCost
from torchtop.model.findings import Finding, Verdict, gain_bound
from torchtop.model.report import RankStanding, Report
from torchtop.runs.records import Step
from torchtop.runs.state import load_run
from torchtop.traces import read_trace

SAMPLES = Path(__file__).resolve().parents[2] / "sample_traces"
STEPS = 122  # steps 0-121: the counted 2-121 are 12 blocks of 10


def _write(fake_run: FakeRun, pid: int, walls_s: list[float], backward_s: list[float]) -> None:
    t = fake_run.t
    for number, (wall, backward) in enumerate(zip(walls_s, backward_s, strict=True)):
        t += wall
        step = Step(t=t, step=number, wall_s=wall, data_wait_s=0.001, backward_s=backward)
        fake_run.agent(pid).write(step)


@cache
def _ddp_window(rank: int) -> RankAnalysis:
    """A profiled window of a real 2-rank gloo DDP job (sample_traces/ddp_gloo)."""
    return analyze_trace(read_trace(next((SAMPLES / "ddp_gloo").glob(f"rank{rank}.*.json.gz"))))


def _assessed(fake_run: FakeRun) -> Report:
    """The report with each rank's profiler window: a verdict, so its findings are listed."""
    windows = {100: _ddp_window(0), 101: _ddp_window(1)}
    return assess(load_run(fake_run.layout.root), windows, load_rules(), context=CONTEXT)


def _straggler_finding(verdict: Verdict) -> Finding | None:
    return next((f for f in verdict.findings if f.rule == "rank-straggler"), None)


def test_synchronised_ranks_with_equal_step_times_get_the_finding_the_judgement_names(
    fake_run: FakeRun,
) -> None:
    # DDP: both ranks' steps last 100 ms; rank 0 waits 40 ms in backward() on rank 1, which
    # waits 10 ms. The mean step times are equal, the old spread rule never fired.
    fake_run.hello(100, rank=0)
    fake_run.hello(101, rank=1)
    _write(fake_run, 100, [0.1] * STEPS, [0.04] * STEPS)
    _write(fake_run, 101, [0.1] * STEPS, [0.01] * STEPS)
    report = _assessed(fake_run)
    standing = report.ranks[1].standing
    assert standing is not None and standing.straggler
    assert report.job.metrics["rank_step_spread"] == pytest.approx(0.0)
    finding = _straggler_finding(report.verdict)
    assert finding is not None, report.verdict.findings
    assert finding.message == (
        "rank 1 is the straggler: +50% busy time vs its peers, the slowest in 12 of 12 blocks"
        " over steps 2-121; its peers wait 30% of each step on it."
    )
    assert standing.waited_share == pytest.approx(0.3)
    assert finding.recoverable_share == pytest.approx(standing.waited_share)
    assert finding.predicted_gain == gain_bound(standing.waited_share)
    assert finding.evidence["straggler_blocks"] == 12
    assert finding.evidence["straggler_first_step"] == 2


def test_ranks_alike_whose_mean_step_times_differ_by_hiccups_get_no_finding(
    fake_run: FakeRun,
) -> None:
    # Rank 1 stalls 1 s in two steps of every other block (its mean step time nearly twice
    # rank 0's), but a block's median ignores them and the two take turns as the busier.
    fake_run.hello(100, rank=0)
    fake_run.hello(101, rank=1)
    walls_0 = [0.100 if (n // 10) % 2 else 0.101 for n in range(STEPS)]
    walls_1 = [0.101 if (n // 10) % 2 else 0.100 for n in range(STEPS)]
    for n in range(STEPS):
        if (n // 10) % 2 and n % 10 in (3, 4):
            walls_1[n] = 1.0
    _write(fake_run, 100, walls_0, [0.0] * STEPS)
    _write(fake_run, 101, walls_1, [0.0] * STEPS)
    report = _assessed(fake_run)
    spread = report.job.metrics["rank_step_spread"]
    assert isinstance(spread, float) and spread > 0.5
    assert not any(r.standing is not None and r.standing.straggler for r in report.ranks)
    assert report.job.metrics["straggler_named"] is False
    assert _straggler_finding(report.verdict) is None


def test_before_the_ranks_share_enough_steps_no_straggler_is_named_whatever_the_spread(
    fake_run: FakeRun,
) -> None:
    fake_run.hello(100, rank=0)
    fake_run.hello(101, rank=1)
    _write(fake_run, 100, [0.1] * 20, [0.0] * 20)
    _write(fake_run, 101, [0.2] * 20, [0.0] * 20)
    report = _assessed(fake_run)
    assert report.job.metrics["rank_step_spread"] == pytest.approx(2 / 3)
    assert report.job.metrics["straggler_named"] is False
    assert _straggler_finding(report.verdict) is None


def test_the_judged_metrics_name_the_standing_that_says_straggler_and_its_persistence() -> None:
    standing = RankStanding(
        straggler=True,
        slower_by=0.2,
        culprit_share=0.85,
        since_step=42,
        waited_share=0.15,
        blocks_judged=20,
        judged_steps=(2, 201),
    )
    metrics = judged_metrics([("rank 0", RankStanding(culprit_share=0.15)), ("rank 1", standing)])
    assert metrics["straggler_rank"] == "rank 1"
    assert (metrics["straggler_blocks"], metrics["straggler_blocks_judged"]) == (17, 20)
    assert (metrics["straggler_first_step"], metrics["straggler_last_step"]) == (2, 201)
    assert metrics["straggler_persistence"] == (
        "busy time vs its peers, the slowest in 17 of 20 blocks over steps 2-201 (since step 42)"
    )
    unnamed = msgspec.structs.replace(standing, straggler=False)
    assert judged_metrics([("rank 0", None), ("rank 1", unnamed)]) == {"straggler_named": False}
    assert judged_metrics([("rank 0", standing)]) == {}


def _traced(rank: int, step_mean_ms: float) -> RankAnalysis:
    """A rank of trace files: two profiled steps of `step_mean_ms`."""
    steps = tuple(StepCost(n, n * step_mean_ms * 1000, step_mean_ms * 1000, {}) for n in (5, 6))
    metrics: Metrics = {"step_mean_ms": step_mean_ms}
    return RankAnalysis(rank, f"rank {rank}", (), (), steps, {}, metrics)


def test_offline_the_spread_of_mean_step_times_decides_under_the_ranks_thresholds() -> None:
    ranks = [_traced(r, ms) for r, ms in enumerate([100.0, 100.0, 125.0])]
    spread = 25.0 / 100.0
    metrics = profiled_metrics(ranks, spread, RankPolicy())
    assert metrics["straggler_named"] is True
    assert metrics["straggler_rank"] == "rank 2"
    assert metrics["straggler_slower_by"] == pytest.approx(0.25)
    assert metrics["straggler_waited_share"] == pytest.approx(0.2)
    # The judgement's thresholds, not the rule's: a stricter min_slower_by names no one.
    strict = RankPolicy(min_slower_by=0.3)
    assert profiled_metrics(ranks, spread, strict) == {"straggler_named": False}
    strict_wait = RankPolicy(min_waited_share=0.25)
    assert profiled_metrics(ranks, spread, strict_wait) == {"straggler_named": False}
    job = {"ranks_count": 3, "steps_count": 2, "communication_share": 0.4, **metrics}
    verdict = diagnose(load_rules(), job)
    finding = _straggler_finding(verdict)
    assert finding is not None and finding.recoverable_share == pytest.approx(0.2)
    assert finding.message == (
        "rank 2 is the straggler: +25% mean step time vs its peers over 2 profiled steps per rank"
        " (mean step times differ by 25% across ranks); its peers wait 20% of each step on it."
    )
