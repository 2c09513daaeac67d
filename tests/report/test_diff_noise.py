"""`diff`'s noise judgement: a step-time difference inside the steps' own spread is within
noise, one well outside it is not; from per-step times where both reports list them, else from
their summaries, and never judged from nothing."""

from __future__ import annotations

from typing import Any

import numpy as np

from torchtop.report.diff_noise import noise_judgement, noise_words


def with_steps(durations_ms: list[float]) -> dict[str, Any]:
    per_step = [{"step": i, "duration_ms": d} for i, d in enumerate(durations_ms)]
    mean = float(np.mean(durations_ms))
    return {"steps": {"count": len(durations_ms), "mean_ms": mean, "per_step": per_step}}


def spread(center_ms: float, half_width_ms: float, n: int = 30, seed: int = 1) -> list[float]:
    rng = np.random.default_rng(seed)
    return list(center_ms + rng.uniform(-half_width_ms, half_width_ms, n))


def test_a_shift_far_beyond_the_steps_spread_is_beyond_noise() -> None:
    noise = noise_judgement(with_steps(spread(100, 2)), with_steps(spread(82, 2, seed=2)))
    assert noise["judged"] and noise["basis"] == "per-step times"
    assert noise["within_noise"] is False
    low, high = noise["interval_ms"]
    assert low < noise["p50_change_ms"] < high < 0
    assert -20 < noise["p50_change_ms"] < -16
    assert noise["steps"] == {"a": 30, "b": 30}


def test_a_shift_smaller_than_the_steps_spread_is_within_noise() -> None:
    """1 ms apart, steps spread over 40 ms: the interval of the median's change holds 0."""
    noise = noise_judgement(with_steps(spread(100, 20)), with_steps(spread(99, 20, seed=2)))
    assert noise["within_noise"] is True
    low, high = noise["interval_ms"]
    assert low < 0 < high
    assert noise["iqr_ms"]["a"] > 10 and noise["iqr_ms"]["b"] > 10
    assert noise_words(noise).startswith("within noise: p50 ")


def test_the_judgement_is_the_same_each_time() -> None:
    a, b = with_steps(spread(100, 5)), with_steps(spread(97, 5, seed=2))
    assert noise_judgement(a, b) == noise_judgement(a, b)


def test_without_per_step_times_it_is_judged_from_the_summaries_and_says_so() -> None:
    a = {"steps": {"count": 400, "mean_ms": 100.0}, "metrics": {"step_cv": 0.05}}
    b = {"steps": {"count": 400, "mean_ms": 90.0}, "metrics": {"step_cv": 0.05}}
    noise = noise_judgement(a, b)
    assert noise["basis"] == "summaries" and noise["within_noise"] is False
    assert noise["mean_change_ms"] == -10.0
    # 1.96 x the means' standard errors combined: hypot(5 / 20, 4.5 / 20) x 1.96 = 0.659 ms.
    assert noise["interval_ms"] == [-10.659, -9.341]
    assert "(from summaries)" in noise_words(noise)
    close = {"steps": {"count": 400, "mean_ms": 99.7}, "metrics": {"step_cv": 0.05}}
    assert noise_judgement(a, close)["within_noise"] is True


def test_with_neither_steps_nor_a_spread_nothing_is_judged() -> None:
    bare = {"steps": {"count": 6, "mean_ms": 100.0}}
    noise = noise_judgement(bare, {"steps": {"count": 6, "mean_ms": 80.0}})
    assert noise["judged"] is False and "no per-step times" in noise["why"]
    assert noise_words(noise).startswith("noise not judged")


def test_the_words_say_one_run_each_does_not_measure_the_variation_between_runs() -> None:
    noise = noise_judgement(with_steps(spread(100, 2)), with_steps(spread(82, 2, seed=2)))
    assert noise_words(noise).startswith("beyond noise: p50 -")
    assert "variation between runs is not in it" in noise_words(noise)
