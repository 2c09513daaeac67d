"""The job's own output as the dashboard's `o` screen reads it: which file, and its tail, followed.

A run folder keeps the job's output in `job.log` (stdout and stderr merged, under the dashboard)
or in `stdout.log` and `stderr.log` (a job started again after a trial), and its stderr alone in
`stderr.log` whatever else. Where stderr is copied into `job.log`, the copy notes the bytes it
wrote (`stderr_marks`: one `START END` line per piece), so each line of the merged log can be
told stderr or stdout from the record, not guessed from its words.

`LogTail` reads only the end of a file (a 1 GB log costs one seek and `TAIL_BYTES`), then only
what was appended since, at most `FOLLOW_BYTES` a read: a job writing faster than that is
followed from its newest bytes and the skip is counted. A file that shrank (truncated, replaced)
is read again from its end. A line is given once its newline is written; a progress bar redrawn
with carriage returns shows its last drawing.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field
from pathlib import Path

TAIL_BYTES = 256 * 1024
"""Read from the end when a file is first opened: a few thousand lines."""
FOLLOW_BYTES = 1 << 20
"""The most read at once while following; beyond, the newest `TAIL_BYTES` are read."""
RANK_PREFIX = re.compile(r"^\[(?:rank|default)?(\d+)\]:")
"""torchrun's `--tee` prefix (`[default0]:`, or `[rank0]:` with a rank prefix template)."""


def stderr_marks(log: Path) -> Path:
    """Where the stderr copy into `log` notes the byte ranges it wrote."""
    return log.with_name(log.name + ".stderr")


def job_output(run_dir: Path) -> Path | None:
    """The file holding the output of the job the folder runs now: the newest relaunch's
    (`jobs/NN/`) when there is one, its merged `job.log`, else its `stdout.log`, else its
    `stderr.log`; None where torchtop kept none (an attached job)."""
    relaunches = sorted(
        (p for p in (run_dir / "jobs").glob("*") if p.name.isdigit()), key=lambda p: int(p.name)
    )
    folder = relaunches[-1] if relaunches else run_dir
    for name in ("job.log", "stdout.log", "stderr.log"):
        if (folder / name).is_file():
            return folder / name
    return None


@dataclass(frozen=True)
class OutputLine:
    text: str
    offset: int
    """The line's first byte in its file."""
    stderr: bool = False
    rank: int | None = None
    """The rank named by a torchrun prefix (`[default1]:`), or None."""


@dataclass
class TailRead:
    lines: list[OutputLine]
    skipped_bytes: int = 0
    """Bytes jumped over unread (a job writing faster than the screen follows)."""
    restarted: bool = False
    """The file shrank (truncated or replaced): read again from its end."""


def line_rank(text: str) -> int | None:
    found = RANK_PREFIX.match(text)
    return int(found[1]) if found else None


@dataclass
class Marks:
    """The stderr ranges copied into a merged log, followed as the log is."""

    path: Path
    starts: list[int] = field(default_factory=list)
    ends: list[int] = field(default_factory=list)
    _offset: int = 0
    _partial: bytes = b""

    def refresh(self) -> None:
        try:
            with self.path.open("rb") as handle:
                handle.seek(self._offset)
                data = handle.read()
        except OSError:
            return
        self._offset += len(data)
        data, self._partial = (self._partial + data).rpartition(b"\n")[::2]
        for row in data.split(b"\n"):
            start, _, end = row.partition(b" ")
            if start.isdigit() and end.isdigit():
                self.starts.append(int(start))
                self.ends.append(int(end))

    def covers(self, start: int, end: int) -> bool:
        """Some stderr byte lies in [start, end)."""
        index = bisect.bisect_left(self.starts, end) - 1
        return index >= 0 and self.ends[index] > start


class LogTail:
    """The end of `path`, then what is appended to it, as whole lines."""

    def __init__(self, path: Path, tail_bytes: int = TAIL_BYTES) -> None:
        self.path = path
        self.tail_bytes = tail_bytes
        self.offset: int | None = None
        self._pending = b""
        marks = stderr_marks(path)
        self.marks = Marks(marks) if marks.is_file() or path.name == "job.log" else None
        self.all_stderr = path.name == "stderr.log"

    def read(self) -> TailRead:
        """The lines completed since the last read (the file's last ones on the first)."""
        try:
            size = self.path.stat().st_size
        except OSError:
            return TailRead([])
        result = TailRead([])
        if self.offset is not None and size < self.offset:
            self.offset, self._pending, result.restarted = None, b"", True
        start, jumped = self._start(size, result)
        start, data = self._read_from(start, size, jumped)
        if self.marks is not None:
            self.marks.refresh()
        result.lines = self._lines(start, data)
        return result

    def _start(self, size: int, result: TailRead) -> tuple[int, bool]:
        """Where to read from, and whether that jumps (so the first line read may be cut)."""
        if self.offset is not None and size - self.offset <= FOLLOW_BYTES:
            return self.offset, False
        start = max(size - self.tail_bytes, 0)
        if self.offset is not None:
            result.skipped_bytes = start - self.offset
        self._pending = b""
        return start, start > 0

    def _read_from(self, start: int, size: int, jumped: bool) -> tuple[int, bytes]:
        try:
            with self.path.open("rb") as handle:
                handle.seek(start)
                data = handle.read(size - start)
        except OSError:
            data = b""
        if jumped:  # the first line read may be cut: start at the next whole one
            cut = data.find(b"\n") + 1
            data, start = data[cut:], start + cut
        self.offset = start + len(data)
        return start, data

    def _lines(self, start: int, data: bytes) -> list[OutputLine]:
        whole, newline, rest = (self._pending + data).rpartition(b"\n")
        offset = start - len(self._pending)
        self._pending = rest
        if not newline:
            return []
        lines = []
        for raw in whole.split(b"\n"):
            text = raw.rstrip(b"\r").decode("utf-8", errors="replace").rsplit("\r", 1)[-1]
            end = offset + len(raw) + 1
            err = self.all_stderr or (self.marks is not None and self.marks.covers(offset, end))
            lines.append(OutputLine(text, offset, err, line_rank(text)))
            offset = end
        return lines
