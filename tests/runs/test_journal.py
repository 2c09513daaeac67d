"""The run folder's JSONL journals: whole records only, torn tails tolerated."""

from __future__ import annotations

from pathlib import Path

from torchtop.runs.journal import JournalReader, JournalWriter, read_record, write_record
from torchtop.runs.records import Record, RunRecord, Step


def steps(records: list[Record]) -> list[int]:
    return [r.step for r in records if isinstance(r, Step)]


def test_a_reader_sees_only_the_records_appended_since_its_last_read(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    reader = JournalReader(path)
    with JournalWriter(path) as writer:
        writer.write(Step(step=0, wall_s=None))
        assert steps(list(reader.read_new())) == [0]
        writer.write(Step(step=1, wall_s=0.5))
        writer.write(Step(step=2, wall_s=0.5))
        assert steps(list(reader.read_new())) == [1, 2]
        assert list(reader.read_new()) == []


def test_a_torn_last_line_waits_for_its_end_while_the_writer_lives(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    path.write_bytes(b'{"kind":"step","step":0,"wall_s":null}\n{"kind":"st')
    reader = JournalReader(path)
    assert steps(list(reader.read_new())) == [0]
    with path.open("ab") as handle:
        handle.write(b'ep","step":1,"wall_s":0.5}\n')
    assert steps(list(reader.read_new())) == [1]
    assert reader.torn_lines == 0


def test_a_torn_last_line_after_a_crash_is_skipped_and_counted(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    path.write_bytes(b'{"kind":"step","step":0,"wall_s":null}\n{"kind":"step","st')
    reader = JournalReader(path)
    assert steps(list(reader.read_new(final=True))) == [0]
    assert reader.torn_lines == 1
    assert list(reader.read_new(final=True)) == []


def test_a_line_that_is_not_json_is_skipped_and_counted(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    path.write_bytes(
        b'{"kind":"step","step":0,"wall_s":null}\nnot json\n{"kind":"step","step":1,"wall_s":1}\n'
    )
    reader = JournalReader(path)
    assert steps(list(reader.read_new())) == [0, 1]
    assert reader.bad_lines == 1


def test_a_missing_journal_reads_as_empty(tmp_path: Path) -> None:
    assert list(JournalReader(tmp_path / "absent.jsonl").read_new()) == []


def test_a_document_written_once_is_read_back_and_leaves_no_temporary_file(tmp_path: Path) -> None:
    write_record(tmp_path / "run.json", RunRecord(kind="run", command=["python", "t.py"], pid=7))
    read = read_record(tmp_path / "run.json", RunRecord)
    assert read == RunRecord(kind="run", command=["python", "t.py"], pid=7)
    assert [p.name for p in tmp_path.iterdir()] == ["run.json"]
    assert read_record(tmp_path / "absent.json", RunRecord) is None
