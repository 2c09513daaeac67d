"""When to capture a profiler window: after warm-up, then periodically, and on request.

The first window opens at step `first_step` (the first steps are start-up, not the job's
rhythm); the next ones `every_s` after the previous one closed, so a slow trace export never
makes windows back up. The dashboard asks for a window by creating or touching
`RUN/requests/window` (`RunLayout.window_request`): every agent of the job (each rank)
answers a request whose modification time is newer than the last it answered, so one touch
yields one window per rank and nobody has to delete the file. `every_s == 0` turns periodic
windows off; requests are still answered.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path


@dataclass
class WindowPlan:
    every_s: float
    first_step: int
    requested: bool = False
    disabled: bool = False
    _next_due_s: float | None = None

    def due(self, next_step: int, now_s: float) -> bool:
        """Whether a window should open before step `next_step` starts."""
        if self.disabled:
            return False
        if self.requested:
            return True
        if self.every_s <= 0:
            return False
        if self._next_due_s is None:
            return next_step >= self.first_step
        return now_s >= self._next_due_s

    def opened(self) -> None:
        self.requested = False

    def closed(self, now_s: float) -> None:
        self._next_due_s = now_s + self.every_s


class RequestWatcher:
    """Sees a request file that is newer than the last one answered (or than `since_ns`)."""

    def __init__(self, path: Path, since_ns: int) -> None:
        self._path = path
        self._answered_ns = since_ns

    def poll(self) -> bool:
        try:
            modified_ns = os.stat(self._path).st_mtime_ns
        except OSError:
            return False
        if modified_ns <= self._answered_ns:
            return False
        self._answered_ns = modified_ns
        return True
