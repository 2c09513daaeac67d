"""The job's stderr, kept in a file of the run folder and copied on to where the user reads it.

A failed job's cause is what it last wrote to stderr (a traceback, Python's "can't open file"),
so torchtop must read it, whether the job's output goes to the terminal (`--headless`) or into
the run folder's log (under the dashboard). The job writes its stderr into `RUN/stderr.log`,
and a thread of torchtop's follows that file and copies each new piece on: to torchtop's own
stderr, or appended to the merged log beside the job's stdout. This is torchrun's own `--tee`
shape (workers write files, a tail thread copies them to the console), chosen over a pipe:
a file never blocks the job or breaks it with EPIPE if torchtop dies, and it keeps the whole
stream for `exit.json`'s tail. The copy lags the job by at most `COPY_EVERY_S`.

Copied into a file beside stdout (the merged `job.log`), each piece's byte range there is noted
in `marks` (`runs.output_tail.stderr_marks`), so the `o` screen can tell the job's stderr lines
from its stdout ones: the file offset after an append is where the piece ended.
"""

from __future__ import annotations

import contextlib
import os
import threading
from pathlib import Path

COPY_EVERY_S = 0.1
READ_BYTES = 1 << 16
TAIL_LINES = 20
"""The last lines of stderr that `exit.json` (and the report's `exit.stderr_tail`) keeps."""
TAIL_BYTES = 16 * 1024
"""Read from the end of the file for the tail: a traceback's last 20 lines fit."""


class StderrCopy:
    """Copies what is appended to `source` on to the file descriptor `sink` until `stop`;
    the copy owns `sink` and closes it."""

    def __init__(self, source: Path, sink: int, marks: Path | None = None) -> None:
        self.source = source
        self.sink = sink
        self.marks = marks
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name="torchtop-stderr", daemon=True)
        self._thread.start()

    def stop(self, timeout_s: float = 5.0) -> None:
        """Copy what is left (the job has ended, so nothing more comes) and end the thread."""
        self._stopping.set()
        self._thread.join(timeout_s)

    def _run(self) -> None:
        try:
            fd = os.open(self.source, os.O_RDONLY)
        except OSError:
            os.close(self.sink)
            return
        marks = _open_marks(self.marks)
        try:
            while not self._stopping.wait(COPY_EVERY_S):
                self._copy_new(fd, marks)
            self._copy_new(fd, marks)  # what the job wrote last, once it has ended
        finally:
            os.close(fd)
            os.close(self.sink)
            if marks is not None:
                os.close(marks)

    def _copy_new(self, fd: int, marks: int | None) -> None:
        while chunk := os.read(fd, READ_BYTES):
            try:
                ranges = _write_all(self.sink, chunk, marks is not None)
            except OSError:  # the reader went away (a closed terminal): the file keeps it all
                return
            if marks is not None and ranges:
                with contextlib.suppress(OSError):  # the marks are a help, never a failure
                    _write_all(marks, "".join(f"{a} {b}\n" for a, b in ranges).encode())


def _open_marks(path: Path | None) -> int | None:
    if path is None:
        return None
    try:
        return os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    except OSError:
        return None


def _write_all(fd: int, data: bytes, where: bool = False) -> list[tuple[int, int]]:
    """Write all of `data`; with `where`, the byte range each write landed on (appended)."""
    view = memoryview(data)
    ranges = []
    while view:
        written = os.write(fd, view)
        view = view[written:]
        if where:
            end = os.lseek(fd, 0, os.SEEK_CUR)
            ranges.append((end - written, end))
    return ranges


def stderr_tail(path: Path, lines: int = TAIL_LINES) -> list[str]:
    """The last `lines` non-empty lines of `path` (decoded leniently); none when unreadable."""
    try:
        with path.open("rb") as handle:
            size = handle.seek(0, os.SEEK_END)
            handle.seek(max(size - TAIL_BYTES, 0))
            data = handle.read()
    except OSError:
        return []
    text = data.decode("utf-8", errors="replace").replace("\r\n", "\n")
    # A progress bar redraws its line with \r: only the last drawing is what the user saw.
    kept = [line.rsplit("\r", 1)[-1].rstrip() for line in text.split("\n")]
    if size > TAIL_BYTES:
        kept = kept[1:]  # the first line read may be cut
    return [line for line in kept if line.strip()][-lines:]
