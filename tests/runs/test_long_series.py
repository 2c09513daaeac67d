"""What the whole run keeps for the long run stays bounded and spread over the run: memory
points thinned evenly past `MAX_POINTS`, and the stacks found by the spans they fell in."""

from __future__ import annotations

import numpy as np

from torchtop.model.report import StackLine
from torchtop.runs.long_series import MAX_POINTS, MemorySeries, StackMarks
from torchtop.runs.records import Step


def test_memory_points_past_the_bound_are_thinned_evenly_over_the_whole_run() -> None:
    series = MemorySeries()
    steps = 3 * MAX_POINTS + 17
    for number in range(steps):
        series.add(Step(step=number, wall_s=0.1, t=float(number), rss_bytes=1000 + number))
    assert MAX_POINTS // 2 <= series.count <= MAX_POINTS
    gaps = np.diff(series.steps)
    assert set(gaps.tolist()) == {float(series.stride)}  # even: one stride throughout
    assert series.steps[0] == 0 and series.steps[-1] >= steps - series.stride
    assert np.array_equal(series.values("rss_bytes"), 1000 + series.steps)
    assert np.isnan(series.values("cuda_allocated_bytes")).all()


def test_a_step_that_measured_no_memory_is_no_point() -> None:
    series = MemorySeries()
    series.add(Step(step=1, wall_s=0.1, t=1.0))
    assert series.count == 0


def test_stacks_are_found_by_process_and_span_and_repeated_stacks_are_held_once() -> None:
    marks = StackMarks()
    saving = (StackLine("save_checkpoint", "train.py", 31),)
    for second in range(10):
        frames = tuple(saving) if second % 3 == 0 else (StackLine("main", "train.py", 50),)
        marks.add(float(second), 7, frames)
    marks.add(3.0, 8, saving)
    found = marks.within(7, [(2.5, 3.5), (5.5, 6.0), (7.5, 8.0), (8.5, 20.0)])
    assert found == [saving, saving, (StackLine("main", "train.py", 50),), saving]
    assert found[0] is found[1]
