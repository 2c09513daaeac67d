"""Keep or revert: the trial's decision on measured step times."""

from __future__ import annotations

import random
from pathlib import Path

from torchtop.relaunch.measure import Measurement
from torchtop.relaunch.trial import TrialSettings, _decide

SETTINGS = TrialSettings(min_gain=0.05, alpha=0.01, max_rounds=2)


def run(median_s: float, spread: float = 0.05, steps: int = 40, seed: int = 0) -> Measurement:
    rng = random.Random(seed)
    walls = tuple(median_s * (1 + rng.uniform(-spread, spread)) for _ in range(steps))
    return Measurement(Path("run"), walls, warmup_steps=5)


def test_even_a_large_gain_is_measured_in_a_second_round_before_it_is_kept() -> None:
    # Two launches of the same job have differed by 7x here (a job that switches rhythm).
    befores, afters = [run(0.25)], [run(0.1, seed=1)]
    assert _decide(befores, afters, SETTINGS, final=False) is None
    befores.append(run(0.25, seed=2))
    afters.append(run(0.1, seed=3))
    decision = _decide(befores, afters, SETTINGS, final=True)
    assert decision is not None
    kept, reason, p_value = decision
    assert kept and reason.startswith("faster beyond noise: 2.5")
    assert p_value is not None and p_value < 1e-6


def test_a_large_gain_in_one_round_only_is_reverted() -> None:
    befores = [run(0.25), run(0.1, seed=2)]
    afters = [run(0.1, seed=1), run(0.1, seed=3)]
    decision = _decide(befores, afters, SETTINGS, final=True)
    assert decision is not None and not decision[0]
    assert "not faster by 5% in every round" in decision[1]


def test_a_fix_that_halves_the_speed_is_reverted_after_one_round() -> None:
    decision = _decide([run(0.1)], [run(0.25, seed=1)], SETTINGS, final=False)
    assert decision is not None and not decision[0]
    assert decision[1].startswith("slower beyond noise")


def test_a_difference_within_noise_is_measured_again_then_reverted() -> None:
    befores, afters = [run(0.1, 0.3)], [run(0.1, 0.3, seed=1)]
    assert _decide(befores, afters, SETTINGS, final=False) is None
    befores.append(run(0.1, 0.3, seed=2))
    afters.append(run(0.1, 0.3, seed=3))
    decision = _decide(befores, afters, SETTINGS, final=True)
    assert decision is not None and not decision[0]
    assert "no difference beyond noise" in decision[1] and decision[1].endswith("reverted")


def test_a_small_real_gain_is_kept_only_when_every_round_agrees() -> None:
    befores = [run(0.100, 0.01, seed=1), run(0.100, 0.01, seed=2)]
    agreeing = [run(0.090, 0.01, seed=3), run(0.090, 0.01, seed=4)]
    decision = _decide(befores, agreeing, SETTINGS, final=True)
    assert decision is not None and decision[0]
    # Much faster in the first round, a hair slower than the same round's baseline in the second.
    slower = Measurement(Path("run"), tuple(s * 1.001 for s in befores[1].step_wall_s), 5)
    disagreeing = [run(0.060, 0.01, seed=3), slower]
    decision = _decide(befores, disagreeing, SETTINGS, final=True)
    assert decision is not None and not decision[0]
    assert "not faster by 5% in every round" in decision[1]


def test_a_gain_beyond_noise_but_under_the_minimum_is_reverted() -> None:
    befores = [run(0.100, 0.005, seed=1), run(0.100, 0.005, seed=2)]
    afters = [run(0.098, 0.005, seed=3), run(0.098, 0.005, seed=4)]
    decision = _decide(befores, afters, SETTINGS, final=True)
    assert decision is not None and not decision[0]
    assert "gains less than the 5%" in decision[1]
