"""The job's stderr, kept in a file of the run folder and copied on to where the user reads it.

A failed job's cause is what it last wrote to stderr (a traceback, Python's "can't open file"),
so torchtop must read it, whether the job's output goes to the terminal (`--headless`) or into
the run folder's log (under the dashboard). The job writes its stderr into `RUN/stderr.log`,
and a thread of torchtop's follows that file and copies each new piece on: to torchtop's own
stderr, or appended to the merged log beside the job's stdout. This is torchrun's own `--tee`
shape (workers write files, a tail thread copies them to the console), chosen over a pipe:
a file never blocks the job or breaks it with EPIPE if torchtop dies, and it keeps the whole
stream for `exit.json`'s tail. The copy lags the job by at most `COPY_EVERY_S`.
"""

from __future__ import annotations

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

    def __init__(self, source: Path, sink: int) -> None:
        self.source = source
        self.sink = sink
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
        try:
            while not self._stopping.wait(COPY_EVERY_S):
                self._copy_new(fd)
            self._copy_new(fd)  # what the job wrote last, once it has ended
        finally:
            os.close(fd)
            os.close(self.sink)

    def _copy_new(self, fd: int) -> None:
        while chunk := os.read(fd, READ_BYTES):
            try:
                _write_all(self.sink, chunk)
            except OSError:  # the reader went away (a closed terminal): the file keeps it all
                return


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


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
