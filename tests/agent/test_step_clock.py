"""Step ends from torchtop.step(), optimizer hooks, backward() and DataLoader batches, counted
once each: the best signal marks the steps, and a better one that appears later takes over."""

from __future__ import annotations

from torchtop.agent.step_clock import (
    BACKWARD,
    DATALOADER,
    HOLD_BATCHES,
    HOLD_S,
    EndedStep,
    StepClock,
)

OPTIMIZER = 1
OTHER_OPTIMIZER = 2


def one(records: list[EndedStep]) -> EndedStep:
    assert len(records) == 1, records
    return records[0]


def test_the_first_step_has_no_wall_time_and_later_ones_run_from_the_previous_end() -> None:
    clock = StepClock()
    first = one(clock.optimizer_stepped(OPTIMIZER, now_s=10.0))
    second = one(clock.optimizer_stepped(OPTIMIZER, now_s=10.25))
    assert (first["step"], first["wall_s"]) == (0, None)
    assert (second["step"], second["wall_s"]) == (1, 0.25)
    assert clock.signal == "optimizer"


def test_data_wait_is_summed_per_step_and_null_until_a_dataloader_is_seen() -> None:
    clock = StepClock()
    first = one(clock.optimizer_stepped(OPTIMIZER, now_s=1.0))
    clock.add_data_wait(0.1)
    clock.add_data_wait(0.05)
    second = one(clock.optimizer_stepped(OPTIMIZER, now_s=2.0))
    third = one(clock.optimizer_stepped(OPTIMIZER, now_s=3.0))
    assert first["data_wait_s"] is None
    assert second["data_wait_s"] == 0.15
    assert third["data_wait_s"] == 0.0


def test_the_loaders_cpu_time_is_summed_with_its_wait_and_unknown_once_a_part_was_not_timed() -> (
    None
):
    clock = StepClock()
    one(clock.optimizer_stepped(OPTIMIZER, now_s=1.0))
    clock.add_data_wait(0.1, cpu_s=0.08)
    clock.add_data_wait(0.05, cpu_s=0.01)
    timed = one(clock.optimizer_stepped(OPTIMIZER, now_s=2.0))
    clock.add_data_wait(0.1, cpu_s=0.02)
    clock.add_data_wait(0.1)
    untimed = one(clock.optimizer_stepped(OPTIMIZER, now_s=3.0))
    assert (timed["data_wait_s"], timed["data_cpu_s"]) == (0.15, 0.09)
    assert (untimed["data_wait_s"], untimed["data_cpu_s"]) == (0.2, None)
    assert one(clock.optimizer_stepped(OPTIMIZER, now_s=4.0))["data_cpu_s"] == 0.0


def test_copy_and_sync_times_are_not_measured() -> None:
    record = one(StepClock().user_stepped(now_s=1.0))
    assert (record["h2d_s"], record["sync_s"]) == (None, None)


def test_a_loop_with_an_optimizer_and_torchtop_step_counts_each_step_once() -> None:
    clock = StepClock()
    ended = []
    for index in range(5):
        now_s = float(index)
        ended += clock.optimizer_stepped(OPTIMIZER, now_s)
        ended += clock.user_stepped(now_s + 0.001)
    assert [s["step"] for s in ended] == [0, 1, 2, 3, 4]
    assert [s["wall_s"] for s in ended[2:]] == [1.0, 1.0, 1.0]
    assert clock.signal == "explicit"


def test_a_second_optimizer_stepping_in_turn_with_the_first_does_not_add_steps() -> None:
    clock = StepClock()
    ended = []
    for index in range(4):
        ended += clock.optimizer_stepped(OPTIMIZER, float(index))
        ended += clock.optimizer_stepped(OTHER_OPTIMIZER, index + 0.5)
    assert len(ended) == 4


def test_an_optimizer_that_replaces_the_first_one_takes_over_as_the_clock() -> None:
    clock = StepClock()
    clock.optimizer_stepped(OPTIMIZER, 0.0)
    ended = [clock.optimizer_stepped(OTHER_OPTIMIZER, float(i)) for i in range(1, 5)]
    assert [len(r) for r in ended] == [0, 1, 1, 1]


def test_without_an_optimizer_each_backward_ends_a_step_at_once() -> None:
    clock = StepClock()
    ended = [clock.signalled(BACKWARD, 0.5 * i) for i in range(4)]
    assert [[r["step"] for r in e] for e in ended] == [[0], [1], [2], [3]]
    assert [e[0]["wall_s"] for e in ended] == [None, 0.5, 0.5, 0.5]
    assert clock.signal == "backward"


def test_gradient_accumulation_counts_optimizer_steps_not_backward_calls() -> None:
    clock = StepClock(optimizer_exists=True)
    ended: list[EndedStep] = []
    now_s = 0.0
    for _ in range(3):
        for _ in range(4):
            now_s += 0.1
            ended += clock.signalled(BACKWARD, now_s)
        now_s += 0.01
        ended += clock.optimizer_stepped(OPTIMIZER, now_s)
    assert [r["step"] for r in ended] == [0, 1, 2]
    assert [r["wall_s"] for r in ended] == [None, 0.41, 0.41]
    assert clock.signal == "optimizer"


def test_an_optimizer_that_never_steps_holds_backward_steps_only_for_a_while() -> None:
    clock = StepClock(optimizer_exists=True)
    assert clock.signalled(BACKWARD, 0.0) == []
    assert clock.signalled(BACKWARD, 1.0) == []
    released = clock.signalled(BACKWARD, HOLD_S[BACKWARD] + 0.5)
    assert [r["step"] for r in released] == [0, 1, 2]
    assert [r["end_s"] for r in released] == [0.0, 1.0, HOLD_S[BACKWARD] + 0.5]
    assert [r["step"] for r in clock.signalled(BACKWARD, HOLD_S[BACKWARD] + 1.0)] == [3]


def test_dataloader_batches_mark_steps_once_no_backward_followed_them_for_a_while() -> None:
    clock = StepClock()
    clock.add_data_wait(0.2)
    assert clock.signalled(DATALOADER, 1.0) == []
    clock.add_data_wait(0.1)
    assert clock.signalled(DATALOADER, 1.5) == []
    # Enough batches, but not yet for long enough; then long enough.
    assert all(clock.signalled(DATALOADER, 2.0 + i) == [] for i in range(HOLD_BATCHES))
    released = clock.signalled(DATALOADER, 1.0 + HOLD_S[DATALOADER])
    assert [r["step"] for r in released] == list(range(HOLD_BATCHES + 3))
    assert [(r["wall_s"], r["data_wait_s"]) for r in released[:2]] == [(None, 0.2), (0.5, 0.1)]
    assert clock.signal == "dataloader"


def test_a_few_batches_are_held_however_long_they_take() -> None:
    clock = StepClock()
    for index in range(HOLD_BATCHES - 1):  # a slow first look at a loader's workers
        assert clock.signalled(DATALOADER, index * HOLD_S[DATALOADER]) == []
    assert len(clock.signalled(DATALOADER, HOLD_BATCHES * HOLD_S[DATALOADER])) == HOLD_BATCHES


def test_a_short_loop_releases_its_held_steps_at_exit() -> None:
    clock = StepClock()
    for index in range(3):
        clock.signalled(DATALOADER, index * 0.1)
    assert [r["step"] for r in clock.release_held()] == [0, 1, 2]
    assert clock.signal == "dataloader"
    assert clock.release_held() == []


def test_batches_iterated_before_training_are_not_counted_as_steps() -> None:
    clock = StepClock()
    for index in range(4):  # a look at the loader's workers before the loop
        clock.signalled(DATALOADER, index * 0.1)
    ended: list[EndedStep] = []
    for index in range(3):
        ended += clock.signalled(DATALOADER, 1.0 + index)
        ended += clock.signalled(BACKWARD, 1.5 + index)
    assert [(r["step"], r["wall_s"]) for r in ended] == [(0, None), (1, 1.0), (2, 1.0)]


def test_a_backward_after_each_batch_drops_the_held_batch_and_marks_the_steps() -> None:
    clock = StepClock()
    ended: list[EndedStep] = []
    for index in range(3):
        ended += clock.signalled(DATALOADER, float(index))
        ended += clock.signalled(BACKWARD, index + 0.5)
    assert [(r["step"], r["wall_s"]) for r in ended] == [(0, None), (1, 1.0), (2, 1.0)]
    assert clock.signal == "backward"


def test_a_better_signal_after_released_steps_re_anchors_without_a_double_count() -> None:
    clock = StepClock()
    ended = clock.signalled(BACKWARD, 0.0) + clock.signalled(BACKWARD, 1.0)
    # An optimizer created late: its first step ends the step backward() just ended.
    assert clock.optimizer_stepped(OPTIMIZER, 1.01) == []
    ended += clock.signalled(BACKWARD, 1.9)
    ended += clock.optimizer_stepped(OPTIMIZER, 2.01)
    assert [(r["step"], r["wall_s"]) for r in ended] == [(0, None), (1, 1.0), (2, 1.0)]


def test_torchtop_step_wins_over_every_other_signal() -> None:
    clock = StepClock(optimizer_exists=True)
    ended: list[EndedStep] = []
    for index in range(3):
        now_s = float(index)
        ended += clock.signalled(DATALOADER, now_s)
        ended += clock.signalled(BACKWARD, now_s + 0.2)
        ended += clock.optimizer_stepped(OPTIMIZER, now_s + 0.3)
        ended += clock.user_stepped(now_s + 0.4)
    assert [r["step"] for r in ended] == [0, 1, 2]
    assert clock.signal == "explicit"
    assert not clock.accepts(BACKWARD) and not clock.accepts(DATALOADER)


def test_the_data_wait_of_dropped_batches_stays_with_the_step_that_contains_them() -> None:
    clock = StepClock(optimizer_exists=True)
    ended: list[EndedStep] = []
    for index in range(2):
        for micro in range(2):
            clock.add_data_wait(0.1)
            ended += clock.signalled(DATALOADER, index + micro * 0.4)
            ended += clock.signalled(BACKWARD, index + micro * 0.4 + 0.1)
        ended += clock.optimizer_stepped(OPTIMIZER, index + 0.9)
    assert [r["data_wait_s"] for r in ended] == [0.2, 0.2]
