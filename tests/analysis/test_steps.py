"""find_steps on small synthetic traces: device-side boundaries, dropped tails, no markers."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.synthetic import Loop, document, span, write_json
from torchtop.analysis.steps import StepWindows, find_steps
from torchtop.analysis.summary import analyze_trace
from torchtop.traces import read_trace


def steps_of(tmp_path: Path, events: list[dict]) -> StepWindows:  # type: ignore[type-arg]
    return find_steps(read_trace(write_json(tmp_path / "t.json", document(events))))


def windows(steps: StepWindows) -> list[tuple[float, float]]:
    return list(zip(steps.start_us.tolist(), steps.end_us.tolist(), strict=True))


def test_host_steps_with_their_device_work_inside_keep_their_host_boundaries(
    tmp_path: Path,
) -> None:
    loop = Loop().standard_step(1, 0).standard_step(2, 100)
    steps = steps_of(tmp_path, loop.events)
    assert windows(steps) == [(0, 100), (100, 200)]
    assert steps.numbers == [1, 2]
    assert steps.has_markers
    assert steps.device_aligned
    assert steps.dropped_tail == 0


def test_a_kernel_still_running_after_the_host_step_extends_it_and_delays_the_next(
    tmp_path: Path,
) -> None:
    loop = Loop().step(1, 0, 100).step(2, 100, 100)
    loop.launch(90, 5, device_ts=95, device_dur=35)  # launched in step 1, ends at 130
    loop.launch(110, 5, device_ts=140, device_dur=20)  # step 2's own work ends at 160
    steps = steps_of(tmp_path, loop.events)
    assert windows(steps) == [(0, 130), (130, 200)]


def test_a_step_ends_when_its_last_device_work_ends_even_past_the_next_host_step(
    tmp_path: Path,
) -> None:
    loop = Loop().step(1, 0, 100).step(2, 100, 100)
    loop.launch(10, 5, device_ts=20, device_dur=30)
    loop.launch(150, 5, device_ts=160, device_dur=90)  # step 2 runs on the device until 250
    steps = steps_of(tmp_path, loop.events)
    assert windows(steps) == [(0, 100), (100, 250)]


def test_the_first_step_starts_after_device_work_queued_before_it_drains(tmp_path: Path) -> None:
    loop = Loop().step(1, 100, 100).step(2, 200, 100)
    loop.launch(50, 5, device_ts=60, device_dur=70)  # before any step, still running at 130
    loop.launch(140, 5, device_ts=150, device_dur=10)
    loop.launch(240, 5, device_ts=250, device_dur=10)
    steps = steps_of(tmp_path, loop.events)
    # Times are relative to the first event (the launch at 50): 130 -> 80, 200 -> 150.
    assert windows(steps) == [(80, 150), (150, 250)]


def test_a_trailing_step_with_no_device_work_is_dropped_and_noted(tmp_path: Path) -> None:
    loop = Loop().standard_step(1, 0).standard_step(2, 100).step(3, 200, 100)
    loop.op("aten::zeros", 210, 10)
    path = write_json(tmp_path / "tail.json", document(loop.events))
    steps = find_steps(read_trace(path))
    assert steps.numbers == [1, 2]
    assert steps.dropped_tail == 1
    notes = analyze_trace(read_trace(path)).notes
    assert any("dropped the last 1 step" in note for note in notes)


def test_a_trailing_step_with_much_less_device_work_than_the_one_before_is_dropped(
    tmp_path: Path,
) -> None:
    loop = Loop().step(1, 0, 100).step(2, 100, 100)
    for i in range(10):
        loop.launch(5 * i, 2, device_ts=5 * i + 2, device_dur=2)
    for i in range(3):  # under 80% of step 1's launches: the capture stopped mid-step
        loop.launch(100 + 5 * i, 2, device_ts=100 + 5 * i + 2, device_dur=2)
    assert steps_of(tmp_path, loop.events).numbers == [1]


def test_a_trailing_step_with_comparable_device_work_is_kept(tmp_path: Path) -> None:
    loop = Loop().step(1, 0, 100).step(2, 100, 100)
    for i in range(10):
        loop.launch(5 * i, 2, device_ts=5 * i + 2, device_dur=2)
        loop.launch(100 + 5 * i, 2, device_ts=100 + 5 * i + 2, device_dur=2)
    assert steps_of(tmp_path, loop.events).numbers == [1, 2]


def test_steps_written_out_of_order_are_sorted_by_start(tmp_path: Path) -> None:
    loop = Loop().standard_step(8, 100).standard_step(7, 0)
    steps = steps_of(tmp_path, loop.events)
    assert steps.numbers == [7, 8]
    assert windows(steps) == [(0, 100), (100, 200)]


def test_a_trace_without_profiler_steps_is_one_step_over_its_operators(tmp_path: Path) -> None:
    loop = Loop()
    loop.op("aten::conv2d", 10, 30)
    loop.op("aten::relu", 60, 15)
    loop.launch(20, 5, device_ts=30, device_dur=20)
    steps = steps_of(tmp_path, loop.events)
    assert len(steps) == 1
    assert not steps.has_markers
    assert steps.numbers == [0]
    assert windows(steps) == [(0, 65)]  # 10..75 relative to the first event at 10


def test_a_trace_without_steps_or_operators_spans_its_device_and_runtime_activity(
    tmp_path: Path,
) -> None:
    events = [
        span("cuda_runtime", "cudaLaunchKernel", 0, 5, correlation=1),
        span("kernel", "k", 10, 30, correlation=1, device=0),
    ]
    steps = steps_of(tmp_path, events)
    assert len(steps) == 1
    assert not steps.has_markers
    assert windows(steps) == [(0, 40)]


@pytest.mark.parametrize("schema", ["current", "2021"])
def test_step_numbers_come_from_the_marker_names(tmp_path: Path, schema: str) -> None:
    loop = Loop(schema).standard_step(41, 0).standard_step(42, 100)
    assert steps_of(tmp_path, loop.events).numbers == [41, 42]
