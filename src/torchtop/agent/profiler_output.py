"""Keeps the profiler's own chatter out of the job's stderr, and in the run folder instead.

Kineto logs to the process's stderr (file descriptor 2) from C++: a `USDT: ... profiler_start`
and `profiler_stop` line per window on torch 2.x, stage lines at lower log levels, and on CUDA
builds without a GPU a `gpuGetDeviceCount failed` warning when it first initialises. Its log
level (`KINETO_LOG_LEVEL`) cannot help: USDT is its highest level, so silencing it silences
errors too, and it is read once, at initialisation, for the whole process.

So each call into the profiler (start, step, stop, export) runs with descriptor 2 pointed at a
temporary file; those calls are synchronous, a few milliseconds on the training thread, and the
job's stderr is its own at every other moment. Afterwards the captured lines are sorted: lines
in Kineto's log format go to `RUN/logs/profiler-<pid>.log`, warnings and errors among them also
to `problems` (the agent writes them as notes, so the report shows them); any other line was
written meanwhile by another of the job's threads, and goes back to the job's stderr at once.
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")

# `USDT:2026-11-24 09:02:22 6960:6960 SyncActivityProfilerHandler.cpp:59] profiler_stop` from
# Kineto's own logger; `W1124 09:02:22.123456  6960 file.cpp:59] message` where it uses glog.
KINETO_LINE = re.compile(
    rb"^(?:(?P<level>VERBOSE|INFO|WARNING|STAGE|ERROR|USDT):\d{4}-\d\d-\d\d \d\d:\d\d:\d\d"
    rb"|(?P<glog>[IWEF])\d{4} \d\d:\d\d:\d\d\.\d+)\s+[\d:]+\s+\S+:\d+\] ?(?P<message>.*)$"
)
PROBLEM_LEVELS = frozenset({"WARNING", "ERROR", "W", "E", "F"})


class ProfilerOutput:
    """Runs profiler calls with their stderr captured and sorted; see the module docstring."""

    def __init__(self, log_path: Path) -> None:
        self.log_path = log_path
        self.problems: list[str] = []

    def call(self, function: Callable[[], T]) -> T:
        """`function()`, with whatever it writes to stderr kept out of the job's."""
        _flush_stderr()
        try:
            saved = os.dup(2)
        except OSError:  # no stderr at all (a daemon closed it): nothing to keep clean
            return function()
        with tempfile.TemporaryFile() as capture:
            try:
                os.dup2(capture.fileno(), 2)
                try:
                    return function()
                finally:
                    _flush_stderr()
                    os.dup2(saved, 2)
            finally:
                os.close(saved)
                capture.seek(0)
                self._sort(capture.read())

    def take_problems(self) -> list[str]:
        problems, self.problems = self.problems, []
        return problems

    def _sort(self, captured: bytes) -> None:
        if not captured:
            return
        kept: list[bytes] = []
        theirs: list[bytes] = []
        for line in captured.splitlines(keepends=True):
            match = KINETO_LINE.match(line.rstrip(b"\r\n"))
            if match is None:
                theirs.append(line)
                continue
            kept.append(line)
            level = (match.group("level") or match.group("glog") or b"").decode()
            if level in PROBLEM_LEVELS:
                message = match.group("message").decode(errors="replace").strip()
                self.problems.append(f"{level}: {message}")
        if theirs:
            _write_all(2, b"".join(theirs))
        if kept:
            try:
                self.log_path.parent.mkdir(parents=True, exist_ok=True)
                with self.log_path.open("ab") as log:
                    log.writelines(line if line.endswith(b"\n") else line + b"\n" for line in kept)
            except OSError as exc:
                self.problems.append(f"its output could not be kept in {self.log_path} ({exc})")


def _flush_stderr() -> None:
    if sys.stderr is not None:
        sys.stderr.flush()


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
