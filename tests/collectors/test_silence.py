"""A rank whose journal stops while a peer's grows is named silent once (`collectors.silence`),
and the stacks schedule dumps only it between the periodic dumps of the whole job."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from torchtop.collectors.silence import SilenceWatch, StacksSchedule
from torchtop.runs.records import StacksSample

STEP = '{"kind":"step","step":1,"t":1.0}\n'


class Clock:
    def __init__(self) -> None:
        self.now_s = 0.0

    def __call__(self) -> float:
        return self.now_s


def grow(path: Path, text: str = STEP) -> None:
    with path.open("a") as handle:
        handle.write(text)


def test_a_journal_quiet_while_a_peer_grows_is_named_once_and_again_after_it_grows(
    tmp_path: Path,
) -> None:
    clock = Clock()
    watch = SilenceWatch(tmp_path, 5.0, clock=clock)
    hung, going, launcher = (tmp_path / f"agent-{pid}.jsonl" for pid in (11, 12, 10))
    grow(launcher, '{"kind":"hello","t":1.0}\n')  # no steps: a launcher is never silent
    for path in (hung, going):
        grow(path)
    assert watch.newly_silent() == []
    for second in range(1, 7):
        clock.now_s = float(second)
        grow(going)
        found = watch.newly_silent()
        assert found == ([11] if second == 5 else []), second
    grow(hung)  # it steps again: a later silence is a new one
    clock.now_s = 7.0
    assert watch.newly_silent() == []
    clock.now_s = 12.0
    grow(going)
    assert watch.newly_silent() == [11]


def test_ranks_that_all_stopped_together_are_not_silent(tmp_path: Path) -> None:
    clock = Clock()
    watch = SilenceWatch(tmp_path, 5.0, clock=clock)
    for pid in (11, 12):
        grow(tmp_path / f"agent-{pid}.jsonl")
    watch.newly_silent()
    clock.now_s = 60.0
    assert watch.newly_silent() == []


def test_a_peer_on_another_node_going_on_counts(tmp_path: Path) -> None:
    own, other = tmp_path / "a", tmp_path / "b"
    own.mkdir()
    other.mkdir()
    clock = Clock()
    watch = SilenceWatch(own, 5.0, peers=lambda: [own, other], clock=clock)
    grow(own / "agent-11.jsonl")
    grow(other / "agent-11.jsonl")  # the same pid on another machine is another journal
    watch.newly_silent()
    clock.now_s = 6.0
    grow(other / "agent-11.jsonl")
    assert watch.newly_silent() == [11]


class Dumps:
    def __init__(self) -> None:
        self.calls: list[set[int] | None] = []

    def sample(self, only: Iterable[int] | None = None) -> StacksSample | None:
        self.calls.append(None if only is None else set(only))
        return StacksSample(t=0.0, processes=[])


def scheduled(folder: Path, silent_after_s: float) -> Dumps:
    """Ten ticks of a schedule that dumps the whole job every 4 s, over two ranks' journals:
    rank 12's grows every second, rank 11's never after the first; the dumps it asked for."""
    clock, dumps = Clock(), Dumps()
    schedule = StacksSchedule(dumps, SilenceWatch(folder, silent_after_s, clock=clock), 4.0, clock)
    grow(folder / "agent-11.jsonl")
    grow(folder / "agent-12.jsonl")
    for second in range(10):
        clock.now_s = float(second)
        grow(folder / "agent-12.jsonl")
        schedule()
    return dumps


def test_the_schedule_dumps_the_job_every_interval_and_a_silent_rank_at_the_next_tick(
    tmp_path: Path,
) -> None:
    dumps = scheduled(tmp_path, silent_after_s=5.0)
    # Whole-job dumps at 0, 4 and 8 s; rank 11 (quiet since 0 s) alone at 5 s, once.
    assert dumps.calls == [None, None, {11}, None]


def test_a_silence_on_the_tick_a_full_dump_falls_due_is_dumped_alone_first(
    tmp_path: Path,
) -> None:
    """The report points at the silent rank's own dump: a full dump due on the same tick waits
    one tick instead of taking its place."""
    dumps = scheduled(tmp_path, silent_after_s=4.0)
    # Rank 11 falls silent at 4 s, when the whole job's dump is due: its own first, the job's
    # at 5 s, then 9 s.
    assert dumps.calls == [None, {11}, None, None]
