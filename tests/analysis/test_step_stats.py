"""One function for the statistics of step durations: numpy's figures, and the same figures
whether the steps came from a trace or from a run's step timing."""

from __future__ import annotations

import numpy as np
import pytest

from torchtop.analysis.breakdown import CATEGORIES
from torchtop.analysis.step_stats import step_stats
from torchtop.analysis.summary import _with_step_metrics
from torchtop.assess.run import step_metrics, wall_metrics
from torchtop.model.analysis import StepCost
from torchtop.runs.state import StepRecord

DURATIONS_MS = np.random.default_rng(7).gamma(2.0, 40.0, size=101)


def test_the_statistics_are_numpys_count_mean_percentiles_spread_and_summed_time_rate() -> None:
    stats = step_stats(DURATIONS_MS)
    assert stats.count == 101
    assert stats.mean_ms == float(np.mean(DURATIONS_MS))
    assert stats.p50_ms == float(np.percentile(DURATIONS_MS, 50))
    assert stats.p95_ms == float(np.percentile(DURATIONS_MS, 95))
    assert stats.cv == pytest.approx(float(np.std(DURATIONS_MS) / np.mean(DURATIONS_MS)))
    assert stats.per_s == pytest.approx(101 / (DURATIONS_MS.sum() / 1000))


def test_no_step_measures_nothing_and_one_step_has_no_spread() -> None:
    none = step_stats(np.array([], dtype=np.float64))
    assert (none.count, none.mean_ms, none.p50_ms, none.p95_ms, none.cv, none.per_s) == (
        0, None, None, None, None, None,
    )  # fmt: skip
    one = step_stats(np.array([80.0]))
    assert (one.mean_ms, one.p50_ms, one.p95_ms, one.cv) == (80.0, 80.0, 80.0, None)


def test_a_trace_and_a_run_with_the_same_step_times_report_the_same_figures() -> None:
    walls_s = [float(d) / 1000 for d in DURATIONS_MS]
    trace_steps = [StepCost(i, 0.0, wall_s * 1e6, {}) for i, wall_s in enumerate(walls_s)]
    traced = _with_step_metrics({}, trace_steps, dict.fromkeys(CATEGORIES, 0.0))
    records = [
        StepRecord(1, i, float(i), wall_s, None, None, None) for i, wall_s in enumerate(walls_s)
    ]
    timed = step_metrics(records)
    period = wall_metrics(np.array(walls_s, dtype=np.float32))
    for key in ("steps_count", "step_mean_ms", "step_p50_ms", "step_p95_ms", "step_cv"):
        assert timed[key] == pytest.approx(traced[key], rel=1e-12), key
    for key in ("steps_count", "step_mean_ms", "step_p50_ms", "step_p95_ms"):
        # The period's walls are kept as float32 (4 bytes a step): equal to their precision.
        assert period[key] == pytest.approx(traced[key], rel=1e-6), key
