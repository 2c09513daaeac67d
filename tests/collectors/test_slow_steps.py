"""A rank inside a step far longer than its usual is dumped at once, once per long step
(`SilenceWatch.newly_slow`): the long run's stalls are located by those dumps. Journals are
real files; their modification times are set, and the watch's wall clock is given."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from tests.collectors.test_silence import Clock, grow
from torchtop.collectors.silence import SLOW_AFTER_TICKS, SilenceWatch, StacksSchedule
from torchtop.runs.records import StacksSample

PID = 21


def _tick(watch: SilenceWatch, wall: Clock, journal: Path, quiet_s: float) -> list[int]:
    """One scan, `quiet_s` after the journal's last write."""
    wall.now_s += 1.0
    os.utime(journal, (wall.now_s - quiet_s, wall.now_s - quiet_s))
    return watch.newly_slow()


def _watch(tmp_path: Path) -> tuple[SilenceWatch, Clock, Path]:
    wall = Clock()
    wall.now_s = 1_000_000.0
    journal = tmp_path / f"agent-{PID}.jsonl"
    grow(journal)
    return SilenceWatch(tmp_path, 5.0, clock=Clock(), wall=wall), wall, journal


def test_a_long_step_among_short_ones_is_named_once_until_the_journal_grows(
    tmp_path: Path,
) -> None:
    watch, wall, journal = _watch(tmp_path)
    for _ in range(SLOW_AFTER_TICKS):
        grow(journal)
        assert _tick(watch, wall, journal, 0.04) == []
    assert _tick(watch, wall, journal, 0.6) == [PID]
    assert _tick(watch, wall, journal, 1.6) == []  # the same long step
    grow(journal)
    assert _tick(watch, wall, journal, 0.05) == []
    assert _tick(watch, wall, journal, 0.7) == [PID]  # the next one


def test_nothing_is_named_before_the_usual_quiet_is_known(tmp_path: Path) -> None:
    watch, wall, journal = _watch(tmp_path)
    assert _tick(watch, wall, journal, 3.0) == []


def test_a_job_of_long_steps_is_not_dumped_every_tick(tmp_path: Path) -> None:
    watch, wall, journal = _watch(tmp_path)
    for tick in range(3 * SLOW_AFTER_TICKS):
        grow(journal)
        assert _tick(watch, wall, journal, 0.5 + (tick % 4) * 0.3) == [], tick


class Dumps:
    def __init__(self) -> None:
        self.asked: list[list[int] | None] = []

    def sample(self, only: Iterable[int] | None = None) -> StacksSample:
        self.asked.append(None if only is None else list(only))
        return StacksSample(t=0.0)


def test_the_schedule_dumps_the_rank_in_a_long_step_alone_between_full_dumps(
    tmp_path: Path,
) -> None:
    watch, wall, journal = _watch(tmp_path)
    dumps, clock = Dumps(), Clock()
    schedule = StacksSchedule(dumps, watch, every_s=1000.0, clock=clock)
    schedule()  # the first full dump
    for quiet_s in [0.03] * SLOW_AFTER_TICKS + [0.8]:
        grow(journal)
        wall.now_s += 1.0
        os.utime(journal, (wall.now_s - quiet_s, wall.now_s - quiet_s))
        schedule()
    assert dumps.asked == [None, [PID]]


def test_stalls_that_take_half_the_ticks_are_still_named(tmp_path: Path) -> None:
    watch, wall, journal = _watch(tmp_path)
    named = []
    for tick in range(4 * SLOW_AFTER_TICKS):
        grow(journal)  # each tick's quiet from a new write: one stall a tick, every other tick
        named += _tick(watch, wall, journal, 0.7 if tick % 2 else 0.03)
    assert len(named) >= 4 * SLOW_AFTER_TICKS // 2 - SLOW_AFTER_TICKS
