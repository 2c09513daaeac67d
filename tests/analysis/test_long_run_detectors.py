"""The long run's detectors on series built here, where the truth is what was planted: a steady
leak is found at its rate, and a one-off jump, a sawtooth and noise are not; stalls every N
steps are found with their period and the share they cost, random slow steps are not; steps/s
that falls is drift, a steady rate with stray slow steps is not; the timeline's buckets add up
to the run."""

from __future__ import annotations

import numpy as np
import pytest

from torchtop.analysis.drift import falling_rate
from torchtop.analysis.growth import steady_growth, theil_sen
from torchtop.analysis.stalls import periodic_stalls
from torchtop.analysis.timeline import timeline

MIB = 2**20
STEPS = np.arange(2, 400, dtype=np.float64)
RNG = np.random.default_rng(3)
NOISE = RNG.normal(0, 4 * MIB, len(STEPS))
BASE = 500 * MIB


def test_a_steady_leak_is_found_at_its_rate_through_noise_and_outliers() -> None:
    leak = BASE + 0.5 * MIB * STEPS + NOISE
    leak[::37] += 200 * MIB  # a buffer held for one step now and then
    growth = steady_growth(STEPS, leak, 16 * MIB)
    assert growth is not None
    assert growth.bytes_per_step == pytest.approx(0.5 * MIB, rel=0.05)
    assert (growth.first_step, growth.last_step) == (2, 399)


def test_theil_sen_gives_the_exact_slope_of_a_line_with_a_third_of_its_points_wrong() -> None:
    y = 3.0 * STEPS + 7.0
    y[::3] = 0.0
    slope, intercept = theil_sen(STEPS, y)
    assert slope == pytest.approx(3.0)
    assert intercept == pytest.approx(7.0)


@pytest.mark.parametrize(
    "series",
    [
        BASE + NOISE,  # flat
        BASE + NOISE + (STEPS > 200) * 300 * MIB,  # a cache filled once, halfway
        BASE + (STEPS % 50) * 4 * MIB,  # grows and frees again
        BASE - 0.5 * MIB * STEPS + NOISE,  # shrinks
        BASE + 0.01 * MIB * STEPS + NOISE,  # 4 MiB over the run: under the floor
    ],
    ids=["flat", "one-off-jump", "sawtooth", "shrinking", "too-little"],
)
def test_memory_that_does_not_grow_steadily_is_not_growth(series: np.ndarray) -> None:
    assert steady_growth(STEPS, series, 16 * MIB) is None


def test_steps_not_measured_are_left_out_of_the_slope() -> None:
    leak = BASE + MIB * STEPS
    leak[1::2] = np.nan
    growth = steady_growth(STEPS, leak, 16 * MIB)
    assert growth is not None and growth.bytes_per_step == pytest.approx(MIB)


def _walls(count: int = 400, typical_s: float = 0.1) -> np.ndarray:
    return typical_s + np.random.default_rng(5).normal(0, 0.004, count)


def test_a_stall_every_40_steps_gives_its_period_cost_and_share_lost() -> None:
    numbers = np.arange(400, dtype=np.int64)
    walls = _walls()
    walls[numbers % 40 == 39] += 1.2
    stalls = periodic_stalls(numbers, walls)
    assert stalls is not None
    assert stalls.period_steps == 40
    assert len(stalls.steps) == 10
    assert stalls.cost_s == pytest.approx(1.2, abs=0.02)
    assert stalls.share_lost == pytest.approx(12.0 / float(walls.sum()), rel=0.02)


def test_a_stall_that_spills_into_the_next_step_is_one_stall() -> None:
    numbers = np.arange(400, dtype=np.int64)
    walls = _walls()
    walls[numbers % 25 == 0] += 0.8
    walls[numbers % 25 == 1] += 0.4
    stalls = periodic_stalls(numbers, walls)
    assert stalls is not None and stalls.period_steps == 25
    assert stalls.cost_s == pytest.approx(1.2, abs=0.02)


@pytest.mark.parametrize("chance", [0.03, 0.1, 0.4])
def test_random_slow_steps_have_no_period(chance: float) -> None:
    numbers = np.arange(400, dtype=np.int64)
    walls = _walls()
    walls[np.random.default_rng(11).random(400) < chance] += 0.6
    assert periodic_stalls(numbers, walls) is None


def test_stalls_on_a_schedule_are_found_among_a_few_lesser_slow_steps() -> None:
    """The hour-long run's case (docs/benchmarks.md): 24 checkpoints of 1.5 s every 600 steps
    and 5 steps of 0.1-0.2 s from a busy machine, whose gaps split five of the 600s."""
    numbers = np.arange(15000, dtype=np.int64)
    walls = _walls(15000, 0.05)
    walls[numbers % 600 == 599] += 1.5
    walls[[1000, 4321, 7777, 9001, 12345]] += [0.06, 0.1, 0.15, 0.08, 0.12]
    stalls = periodic_stalls(numbers, walls)
    assert stalls is not None and stalls.period_steps == 600 and stalls.count == 25
    assert stalls.cost_s == pytest.approx(1.5, abs=0.02)
    assert 4321 not in stalls.steps and 599 in stalls.steps


def test_random_slow_steps_of_two_sizes_have_no_period() -> None:
    numbers = np.arange(2000, dtype=np.int64)
    walls = _walls(2000)
    chance = np.random.default_rng(13).random(2000)
    walls[chance < 0.02] += 0.4
    walls[chance > 0.99] += 1.5
    assert periodic_stalls(numbers, walls) is None


def test_two_stalls_are_too_few_for_a_schedule() -> None:
    numbers = np.arange(400, dtype=np.int64)
    walls = _walls()
    walls[[100, 200]] += 1.0
    assert periodic_stalls(numbers, walls) is None


def test_steps_30_percent_slower_after_a_while_are_drift() -> None:
    walls = _walls(300)
    walls[180:] *= 1.3
    drift = falling_rate(walls)
    assert drift is not None
    assert drift.fall == pytest.approx(1 - 1 / 1.3, abs=0.02)
    assert 150 <= drift.first_slow_bucket * drift.bucket_steps <= 180


@pytest.mark.parametrize("planted", ["steady", "random-slow-steps", "stalls", "one-slow-bucket"])
def test_a_job_that_holds_its_speed_does_not_drift(planted: str) -> None:
    walls = _walls(300)
    if planted == "random-slow-steps":
        walls[np.random.default_rng(2).random(300) < 0.1] += 0.5
    elif planted == "stalls":
        walls[::20] += 1.2
    elif planted == "one-slow-bucket":
        walls[120:150] *= 1.5  # a neighbour's burst, then back
    assert falling_rate(walls) is None


def test_the_timeline_counts_every_step_and_stall_once_and_keeps_the_memory_peak() -> None:
    walls = np.full(100, 0.5)
    ends = 1000.0 + np.cumsum(walls)
    stalled = np.zeros(100, dtype=np.bool_)
    stalled[[10, 50, 90]] = True
    rss = np.linspace(100.0, 200.0, 100)
    found = timeline(ends, walls, stalled, (ends, {"rss_bytes": rss}))
    assert found is not None
    assert found.started_at == 1000.0
    assert sum(b.steps for b in found.buckets) == 100
    assert sum(b.stalls for b in found.buckets) == 3
    assert found.buckets[0].steps_per_s == pytest.approx(2.0)
    assert found.buckets[-1].rss_bytes == 200.0
    assert found.buckets[-1].cuda_allocated_bytes is None
    assert len(found.buckets) == 50  # 50 s in 1 s buckets, under the 60 at most
