"""Every counted step summed in blocks of step numbers (`runs.step_blocks`), as the reader
folds a journal's steps in."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from torchtop.assess.run import WARMUP_STEPS
from torchtop.runs.layout import RunLayout
from torchtop.runs.records import Step
from torchtop.runs.state import ProcessState, RunState, _apply_agent_record
from torchtop.runs.step_blocks import BLOCK_STEPS, FIRST_STEP, MAX_BLOCK, StepBlocks, block_of


def test_the_blocks_leave_out_the_same_warm_up_as_the_step_figures() -> None:
    assert FIRST_STEP == WARMUP_STEPS


def test_each_block_sums_its_steps_busy_time_and_wall_and_keeps_its_first_steps_time() -> None:
    state = RunState(RunLayout(Path("/nonexistent")))
    for number in range(0, 2 + 2 * BLOCK_STEPS + 3):
        step = Step(step=number, wall_s=0.1, t=1000.0 + number, backward_s=0.04)
        _apply_agent_record(state, 7, step)
    blocks = state.processes[7].blocks
    assert blocks.size == 3
    assert list(blocks.count[:3]) == [BLOCK_STEPS, BLOCK_STEPS, 3]
    assert np.allclose(blocks.busy_s[:3], [0.6, 0.6, 0.18])
    assert np.allclose(blocks.wall_s[:3], [1.0, 1.0, 0.3])
    assert list(blocks.first_t[:3]) == [1002.0, 1012.0, 1022.0]


def test_a_step_numbered_past_the_last_block_is_not_kept() -> None:
    blocks = StepBlocks()
    assert block_of(1) is None and block_of(FIRST_STEP) == 0
    far = FIRST_STEP + (MAX_BLOCK + 1) * BLOCK_STEPS
    blocks.add(far, 0.1, 0.1, 1.0)
    assert blocks.size == 0 and len(blocks.count) == StepBlocks.CHUNK
    assert isinstance(ProcessState(1).blocks, StepBlocks)


def test_a_blocks_median_busy_time_is_not_dragged_by_one_hiccup() -> None:
    blocks = StepBlocks()
    for n in range(FIRST_STEP, FIRST_STEP + BLOCK_STEPS + 4):
        busy_s = 0.030 if n == FIRST_STEP + 3 else 0.003  # one 30 ms hiccup in block 0
        blocks.add(n, 0.05, busy_s, float(n))
    assert np.allclose(blocks.median_busy_s(2), [0.003, 0.003])
    assert blocks.busy_s[0] / blocks.count[0] > 0.005  # the mean is dragged
    blocks.add(FIRST_STEP + BLOCK_STEPS + 4, 0.05, 0.009, 99.0)  # the newest block moves
    assert np.allclose(blocks.median_busy_s(2), [0.003, 0.003])
    for n in range(FIRST_STEP + BLOCK_STEPS + 5, FIRST_STEP + BLOCK_STEPS + 8):
        blocks.add(n, 0.05, 0.009, 99.0)  # four of 3 ms, four of 9 ms
    assert np.allclose(blocks.median_busy_s(2), [0.003, 0.006])
    # Grown past its first chunk, the kept medians and values stay.
    blocks.add(FIRST_STEP + StepBlocks.CHUNK * BLOCK_STEPS, 0.05, 0.001, 1.0)
    medians = blocks.median_busy_s(blocks.size)
    assert np.allclose(medians[:2], [0.003, 0.006]) and medians[-1] == np.float32(0.001)
    assert np.isnan(medians[2])  # no step in it
