"""Step ends from optimizer hooks and from `torchtop.step()`, counted once each."""

from __future__ import annotations

from torchtop.agent.step_clock import StepClock

OPTIMIZER = 1
OTHER_OPTIMIZER = 2


def test_the_first_step_has_no_wall_time_and_later_ones_run_from_the_previous_end() -> None:
    clock = StepClock()
    first = clock.optimizer_stepped(OPTIMIZER, now_s=10.0)
    second = clock.optimizer_stepped(OPTIMIZER, now_s=10.25)
    assert first is not None and second is not None
    assert (first["step"], first["wall_s"]) == (0, None)
    assert (second["step"], second["wall_s"]) == (1, 0.25)


def test_data_wait_is_summed_per_step_and_null_until_a_dataloader_is_seen() -> None:
    clock = StepClock()
    first = clock.optimizer_stepped(OPTIMIZER, now_s=1.0)
    clock.add_data_wait(0.1)
    clock.add_data_wait(0.05)
    second = clock.optimizer_stepped(OPTIMIZER, now_s=2.0)
    third = clock.optimizer_stepped(OPTIMIZER, now_s=3.0)
    assert first is not None and second is not None and third is not None
    assert first["data_wait_s"] is None
    assert second["data_wait_s"] == 0.15
    assert third["data_wait_s"] == 0.0


def test_copy_and_sync_times_are_not_measured() -> None:
    record = StepClock().user_stepped(now_s=1.0)
    assert record is not None
    assert (record["h2d_s"], record["sync_s"]) == (None, None)


def test_a_loop_with_an_optimizer_and_torchtop_step_counts_each_step_once() -> None:
    clock = StepClock()
    ended = []
    for index in range(5):
        now_s = float(index)
        ended.append(clock.optimizer_stepped(OPTIMIZER, now_s))
        ended.append(clock.user_stepped(now_s + 0.001))
    steps = [r for r in ended if r is not None]
    assert [s["step"] for s in steps] == [0, 1, 2, 3, 4]
    assert [s["wall_s"] for s in steps[2:]] == [1.0, 1.0, 1.0]


def test_a_second_optimizer_stepping_in_turn_with_the_first_does_not_add_steps() -> None:
    clock = StepClock()
    ended = []
    for index in range(4):
        ended.append(clock.optimizer_stepped(OPTIMIZER, float(index)))
        ended.append(clock.optimizer_stepped(OTHER_OPTIMIZER, index + 0.5))
    assert len([r for r in ended if r is not None]) == 4


def test_an_optimizer_that_replaces_the_first_one_takes_over_as_the_clock() -> None:
    clock = StepClock()
    clock.optimizer_stepped(OPTIMIZER, 0.0)
    ended = [clock.optimizer_stepped(OTHER_OPTIMIZER, float(i)) for i in range(1, 5)]
    assert [r is not None for r in ended] == [False, True, True, True]
