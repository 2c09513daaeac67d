"""Step records are batched into bursts of writes; other records are written at once, in order."""

from __future__ import annotations

from typing import Any

import msgspec

from torchtop.agent.sink import RecordSink
from torchtop.runs.records import Bye, Hello, JournalRecord, Note, Step, Window


class ListWriter:
    def __init__(self) -> None:
        self.records: list[dict[str, Any]] = []
        self.closed = False

    def write(self, record: JournalRecord) -> None:
        self.records.append(msgspec.to_builtins(record))

    def close(self) -> None:
        self.closed = True


def step(number: int) -> Step:
    return Step(step=number, wall_s=None)


def test_a_slow_step_is_written_as_soon_as_it_ends() -> None:
    writer = ListWriter()
    sink = RecordSink(lambda: writer, flush_every_s=0.05)
    for number in range(3):
        sink.add_step(step(number), now_s=number * 0.1)
        assert len(writer.records) == number + 1


def test_fast_steps_wait_for_the_next_burst_but_each_is_its_own_record() -> None:
    writer = ListWriter()
    sink = RecordSink(lambda: writer, flush_every_s=0.05)
    for number in range(10):
        sink.add_step(step(number), now_s=number * 0.001)
    assert [r["step"] for r in writer.records] == [0]
    sink.add_step(step(10), now_s=0.06)
    assert [r["step"] for r in writer.records] == list(range(11))


def test_any_other_record_is_written_after_the_steps_kept_before_it() -> None:
    writer = ListWriter()
    sink = RecordSink(lambda: writer)
    sink.add_step(step(0), now_s=0.0)
    sink.add_step(step(1), now_s=0.001)
    sink.write(Window(t=0.0, path="traces/w.json"))
    assert [r["kind"] for r in writer.records] == ["step", "step", "window"]


def test_a_note_is_written_once_per_key() -> None:
    writer = ListWriter()
    sink = RecordSink(lambda: writer)
    for _ in range(3):
        sink.note_once("profiler", Note(t=0.0, message="failed"))
    assert len(writer.records) == 1


def test_closing_writes_the_kept_steps_and_closes_the_file_once() -> None:
    writer = ListWriter()
    sink = RecordSink(lambda: writer)
    sink.add_step(step(0), now_s=0.0)
    sink.add_step(step(1), now_s=0.001)
    sink.close()
    sink.close()
    sink.write(Bye(t=0.0))
    assert [r["step"] for r in writer.records] == [0, 1]
    assert writer.closed


def test_a_holding_sink_writes_nothing_and_opens_no_file_if_no_step_comes() -> None:
    opened: list[ListWriter] = []

    def open_writer() -> ListWriter:
        opened.append(ListWriter())
        return opened[-1]

    sink = RecordSink(open_writer, hold_until_step=True)
    sink.write(Hello(t=0.0))
    sink.write(Bye(t=0.0))
    sink.close()
    assert opened == []


def test_a_holding_sink_writes_what_it_held_once_the_first_step_comes() -> None:
    writer = ListWriter()
    sink = RecordSink(lambda: writer, hold_until_step=True)
    sink.write(Hello(t=0.0))
    sink.add_step(step(0), now_s=0.0)
    sink.write(Bye(t=0.0))
    assert [r["kind"] for r in writer.records] == ["hello", "step", "bye"]
