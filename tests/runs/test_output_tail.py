"""`LogTail`: the end of a job's log, then what is appended, as whole lines; cheap on a big log."""

from __future__ import annotations

import os
from pathlib import Path

from torchtop.runs.output_tail import FOLLOW_BYTES, TAIL_BYTES, LogTail, job_output, stderr_marks


def test_a_gigabyte_log_is_read_from_its_end_only(tmp_path: Path) -> None:
    log = tmp_path / "job.log"
    with log.open("wb") as handle:
        handle.truncate(1 << 30)  # a sparse GiB of history
        handle.seek(1 << 30)
        handle.write(b"\n" + b"".join(b"step %d\n" % i for i in range(50)))
    tail = LogTail(log)
    lines = tail.read().lines
    assert [line.text for line in lines[-50:]] == [f"step {i}" for i in range(50)]
    assert lines[0].offset >= (1 << 30) + 400 - TAIL_BYTES  # nothing before the tail was read
    assert tail.offset == log.stat().st_size


def test_appended_lines_come_once_whole_and_a_redrawn_line_shows_its_last_drawing(
    tmp_path: Path,
) -> None:
    log = tmp_path / "job.log"
    log.write_bytes(b"first\n")
    tail = LogTail(log)
    assert [line.text for line in tail.read().lines] == ["first"]
    with log.open("ab") as handle:
        handle.write(b"progress 10%\rprogress 50%\rprog")
    assert tail.read().lines == []  # the line is not ended yet
    with log.open("ab") as handle:
        handle.write(b"ress 100%\r\n[default1]:rank one says\n")
    lines = tail.read().lines
    assert [(line.text, line.rank) for line in lines] == [
        ("progress 100%", None),
        ("[default1]:rank one says", 1),
    ]
    assert lines[1].offset == len(b"first\nprogress 10%\rprogress 50%\rprogress 100%\r\n")


def test_a_job_writing_faster_than_followed_is_followed_from_its_newest_bytes(
    tmp_path: Path,
) -> None:
    log = tmp_path / "job.log"
    log.write_bytes(b"old\n")
    tail = LogTail(log)
    tail.read()
    burst = b"".join(b"line %08d\n" % i for i in range(FOLLOW_BYTES // 14 + 1000))
    with log.open("ab") as handle:
        handle.write(burst)
    read = tail.read()
    assert read.skipped_bytes > 0
    assert read.lines[-1].text == f"line {FOLLOW_BYTES // 14 + 999:08d}"
    assert 4 + read.skipped_bytes + sum(len(x.text) + 1 for x in read.lines) <= log.stat().st_size


def test_a_truncated_log_is_read_again_from_its_end(tmp_path: Path) -> None:
    log = tmp_path / "job.log"
    log.write_bytes(b"one\ntwo\nthree\n")
    tail = LogTail(log)
    tail.read()
    log.write_bytes(b"again\n")
    read = tail.read()
    assert read.restarted and [line.text for line in read.lines] == ["again"]


def test_stderr_lines_are_those_the_marks_cover_and_stderr_log_is_all_stderr(
    tmp_path: Path,
) -> None:
    log = tmp_path / "job.log"
    log.write_bytes(b"out 1\nerr 1\nout 2\nerr 2\n")
    stderr_marks(log).write_text("6 12\n18 24\n")
    assert [(x.text, x.stderr) for x in LogTail(log).read().lines] == [
        ("out 1", False), ("err 1", True), ("out 2", False), ("err 2", True),
    ]  # fmt: skip
    err = tmp_path / "stderr.log"
    err.write_bytes(b"err 1\n")
    assert [x.stderr for x in LogTail(err).read().lines] == [True]


def test_the_output_shown_is_the_newest_relaunchs_and_none_where_nothing_was_kept(
    tmp_path: Path,
) -> None:
    assert job_output(tmp_path) is None
    (tmp_path / "job.log").write_text("")
    assert job_output(tmp_path) == tmp_path / "job.log"
    for number in ("01", "02"):
        os.makedirs(tmp_path / "jobs" / number)
        (tmp_path / "jobs" / number / "stdout.log").write_text("")
    assert job_output(tmp_path) == tmp_path / "jobs" / "02" / "stdout.log"
