"""The history is bounded: at capacity, neighbours merge and the chart still spans the run."""

from __future__ import annotations

from torchtop.tui.timeline import Point, Timeline, merge


def point(t: float, rate: float | None = 1.0, marker: str = "") -> Point:
    return Point(t, rate, {"dataloader": t / 100}, marker)


def test_a_full_timeline_halves_and_keeps_spanning_the_whole_run() -> None:
    timeline = Timeline(capacity=8)
    for t in range(1, 101):
        timeline.add(point(float(t)))
    series = timeline.series()
    assert len(series) <= 8
    assert series[-1].elapsed_s == 100.0
    assert timeline.span == 16
    assert series[0].shares["dataloader"] < 0.2


def test_memory_stays_bounded_over_an_hour_of_ticks() -> None:
    timeline = Timeline(capacity=64)
    for t in range(3600):
        timeline.add(point(float(t)))
    assert len(timeline.points) < 64
    assert len(timeline.series()) <= 65


def test_merging_averages_what_was_measured_and_keeps_a_marker() -> None:
    merged = merge([point(1, 2.0), point(2, None, "relaunch"), point(3, 4.0)])
    assert merged.elapsed_s == 3
    assert merged.steps_per_s == 3.0
    assert merged.marker == "relaunch"
    assert merged.shares == {"dataloader": 0.02}
