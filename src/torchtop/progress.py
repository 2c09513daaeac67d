"""A progress bar on stderr for trace files that take more than a second to read, and a count
of ranks done for a folder read on a Dask cluster (`CountProgress`).

It draws nothing for fast work, and only on a terminal (or when TORCHTOP_PROGRESS=1), so
piped output and CI logs stay clean.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import TextIO

DELAY_S = 1.0
WIDTH = 30


class FileProgress:
    def __init__(
        self, path: Path, stream: TextIO | None = None, clock: object = time.monotonic
    ) -> None:
        self.label = path.name if len(path.name) <= 40 else "…" + path.name[-39:]
        self.stream = stream or sys.stderr
        self.clock = clock
        self.started = clock()  # type: ignore[operator]
        self.drawn = False

    def __call__(self, done_bytes: int, total_bytes: int) -> None:
        now = self.clock()  # type: ignore[operator]
        if now - self.started < DELAY_S:
            return
        fraction = min(done_bytes / total_bytes, 1.0) if total_bytes else 0.0
        filled = int(fraction * WIDTH)
        bar = "#" * filled + "-" * (WIDTH - filled)
        self.stream.write(f"\r{self.label} [{bar}] {fraction:4.0%} {now - self.started:5.1f}s")
        self.stream.flush()
        self.drawn = True

    def close(self) -> None:
        if self.drawn:
            self.stream.write("\n")
            self.stream.flush()


class CountProgress(FileProgress):
    """`label [####------] 12 of 64 ranks done  3.1s`: work counted in whole items."""

    def __init__(
        self, label: str, unit: str, stream: TextIO | None = None, clock: object = time.monotonic
    ) -> None:
        super().__init__(Path(label), stream, clock)
        self.label = label
        self.unit = unit

    def __call__(self, done: int, total: int) -> None:
        now = self.clock()  # type: ignore[operator]
        if now - self.started < DELAY_S:
            return
        filled = int(min(done / total, 1.0) * WIDTH) if total else 0
        bar = "#" * filled + "-" * (WIDTH - filled)
        elapsed_s = now - self.started
        self.stream.write(
            f"\r{self.label} [{bar}] {done} of {total} {self.unit} done {elapsed_s:5.1f}s"
        )
        self.stream.flush()
        self.drawn = True


def progress_enabled(stream: TextIO | None = None) -> bool:
    if os.environ.get("TORCHTOP_PROGRESS") == "1":
        return True
    if os.environ.get("TORCHTOP_PROGRESS") == "0":
        return False
    return (stream or sys.stderr).isatty()
