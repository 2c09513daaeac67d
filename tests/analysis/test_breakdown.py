"""The step-time breakdown: each moment to the first busy category in tb-profiler's order."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.synthetic import EXPECTED_STEP_US, Loop, document, write_json
from torchtop.analysis.breakdown import CATEGORIES
from torchtop.analysis.summary import analyze_trace
from torchtop.model.analysis import RankAnalysis
from torchtop.traces import read_trace

NCCL = "ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)"


def analyse(tmp_path: Path, loop: Loop) -> RankAnalysis:
    return analyze_trace(read_trace(write_json(tmp_path / "t.json", document(loop.events))))


def test_each_step_splits_by_priority_and_the_parts_add_up(tmp_path: Path) -> None:
    analysis = analyse(tmp_path, Loop().standard_step(1, 0).standard_step(2, 100))
    for step in analysis.steps:
        assert step.parts_us == pytest.approx(EXPECTED_STEP_US)
        assert sum(step.parts_us.values()) == pytest.approx(step.duration_us)
    assert set(analysis.breakdown) == set(CATEGORIES)


def test_collective_kernels_count_as_communication_not_kernel(tmp_path: Path) -> None:
    loop = Loop().step(1, 0, 100)
    loop.launch(0, 5, device_ts=10, device_dur=30)
    loop.launch(5, 5, device_ts=50, device_dur=40, name=NCCL)
    parts = analyse(tmp_path, loop).steps[0].parts_us
    assert parts["kernel"] == pytest.approx(30)
    assert parts["communication"] == pytest.approx(40)


def test_communication_hidden_behind_compute_is_not_counted_as_communication(
    tmp_path: Path,
) -> None:
    loop = Loop().step(1, 0, 100)
    loop.launch(0, 5, device_ts=10, device_dur=60)
    loop.launch(5, 5, device_ts=20, device_dur=30, name=NCCL)  # fully under the compute kernel
    analysis = analyse(tmp_path, loop)
    assert analysis.steps[0].parts_us["communication"] == pytest.approx(0)
    assert analysis.steps[0].parts_us["kernel"] == pytest.approx(60)
    assert analysis.metrics["comm_overlap_fraction"] == pytest.approx(1.0)


def test_runtime_calls_under_a_running_kernel_count_as_kernel_time(tmp_path: Path) -> None:
    loop = Loop().step(1, 0, 100)
    loop.launch(0, 10, device_ts=10, device_dur=50)
    loop.launch(20, 30, device_ts=60, device_dur=10)  # its runtime call lies under the first kernel
    parts = analyse(tmp_path, loop).steps[0].parts_us
    assert parts["kernel"] == pytest.approx(60)
    assert parts["runtime"] == pytest.approx(10)  # only 0..10, before the first kernel starts
    assert parts["other"] == pytest.approx(30)


def test_the_dataloader_outranks_the_operators_inside_it(tmp_path: Path) -> None:
    loop = Loop().step(1, 0, 100)
    loop.dataloader(0, 50)
    loop.op("aten::stack", 10, 20)  # collate inside __next__
    loop.op("aten::conv2d", 60, 20)
    loop.launch(90, 2, device_ts=92, device_dur=8)
    parts = analyse(tmp_path, loop).steps[0].parts_us
    assert parts["dataloader"] == pytest.approx(50)
    assert parts["cpu_exec"] == pytest.approx(20)
