"""The warm-up rule on step sequences: past the DataLoader's queue, then until steady, capped."""

from __future__ import annotations

import random

from torchtop.model.trials import Span
from torchtop.runs.records import LoaderSettings, Settings
from torchtop.trials.warmup import end_of_warmup, queued_batches

SPAN = Span(steps=20, warmup_steps=8)


def noisy(value_s: float, count: int, seed: int = 0, spread: float = 0.03) -> list[float]:
    rng = random.Random(seed)
    return [value_s * (1.0 + rng.uniform(-spread, spread)) for _ in range(count)]


def loader(num_workers: int, prefetch_factor: int | None) -> Settings:
    return Settings(
        dataloader=LoaderSettings(num_workers=num_workers, prefetch_factor=prefetch_factor)
    )


def test_the_queue_is_the_workers_times_their_prefetch_and_nothing_without_workers() -> None:
    assert queued_batches(loader(num_workers=8, prefetch_factor=2)) == 16
    assert queued_batches(loader(num_workers=3, prefetch_factor=5)) == 15
    assert queued_batches(loader(num_workers=4, prefetch_factor=None)) == 8
    assert queued_batches(loader(num_workers=0, prefetch_factor=None)) == 0
    assert queued_batches(Settings(dataloader=None)) == 0
    assert queued_batches(None) == 0


def test_a_stationary_job_warms_up_for_the_minimum_and_two_settled_windows() -> None:
    walls = [0.5, *noisy(0.1, 60)]
    warmup = end_of_warmup(walls, queued=0, span=SPAN)
    assert warmup is not None
    assert warmup.steps == 2 * SPAN.settle_steps and warmup.ended_by == "stationary"


def test_a_pipeline_that_fills_its_queue_then_slows_is_measured_only_once_slow() -> None:
    # 16 queued batches come at compute speed, then the workers' real rate shows, after a
    # drain of a few steps that a fixed warm-up of 8 would have measured as fast.
    walls = [1.0, *noisy(0.01, 15), 0.03, 0.05, 0.07, 0.09, *noisy(0.1, 80, seed=1)]
    warmup = end_of_warmup(walls, queued=16, span=SPAN)
    assert warmup is not None and warmup.ended_by == "stationary"
    assert warmup.steps >= 16 + 4 + 2 * SPAN.settle_steps - 4
    assert min(walls[warmup.steps :]) > 0.09


def test_the_queued_batches_are_left_out_even_when_they_look_steady() -> None:
    walls = noisy(0.01, 40)
    warmup = end_of_warmup(walls, queued=24, span=SPAN)
    assert warmup is not None and warmup.steps == 24 + 2 * SPAN.settle_steps


def test_a_job_that_keeps_slowing_down_stops_warming_up_at_the_step_cap() -> None:
    # 3% slower every step (a leak, a growing queue): no two windows of 5 ever agree within 10%.
    walls = [0.001 * 1.03**i for i in range(SPAN.max_warmup_steps + 50)]
    span = Span(steps=20, warmup_steps=8, max_warmup_s=1e9)
    warmup = end_of_warmup(walls, queued=4, span=span)
    assert warmup is not None
    assert warmup.ended_by == "step cap" and warmup.steps == span.max_warmup_steps


def test_a_slow_job_that_never_settles_stops_at_the_time_cap_but_after_its_queue() -> None:
    walls = [0.5 * (1.5 if i % 10 < 5 else 1.0) for i in range(100)]
    span = Span(steps=20, warmup_steps=8, max_warmup_s=10.0)
    warmup = end_of_warmup(walls, queued=0, span=span)
    assert warmup is not None and warmup.ended_by == "time cap"
    assert 10.0 <= warmup.duration_s < 10.0 + max(walls)
    queued = end_of_warmup(walls, queued=40, span=span)
    assert queued is not None and queued.steps == 40


def test_no_warm_up_is_decided_before_the_steps_that_would_decide_it() -> None:
    assert end_of_warmup(noisy(0.1, 9), queued=0, span=SPAN) is None
    assert end_of_warmup(noisy(0.1, 20), queued=16, span=SPAN) is None


def test_the_warm_up_found_does_not_change_as_more_steps_arrive() -> None:
    walls = [1.0, *noisy(0.01, 15), 0.03, 0.05, 0.07, 0.09, *noisy(0.1, 300, seed=2)]
    found = {
        (w.steps, w.ended_by)
        for n in range(40, len(walls), 7)
        if (w := end_of_warmup(walls[:n], queued=16, span=SPAN)) is not None
    }
    assert len(found) == 1
