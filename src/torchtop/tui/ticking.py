"""Where live frames come from, and when: the snapshot source, the pacer and the message.

The dashboard's tick thread asks the `source` for a snapshot each time the `pacer` lets it,
turns it into a `Frame` and posts a `FrameMessage` to the app. `LiveMonitor` is the source
and `IntervalPacer` the real clock; tests pass a `LiveMonitor` over a replayed run, on the run's
simulated clock, and a pacer they step by hand, so no test sleeps or reads the wall clock. A
newer frame message replaces an older one still queued: a slow screen never works through a
backlog of stale frames.
"""

from __future__ import annotations

import threading
import time
from typing import Protocol, runtime_checkable

from textual.message import Message

from torchtop.assess.snapshot import Snapshot
from torchtop.model.report import Report
from torchtop.tui.frame import Frame


class SnapshotSource(Protocol):
    """`LiveMonitor`'s shape: one snapshot per tick, then the final report once."""

    def tick(self) -> Snapshot: ...

    def finish(self) -> Report: ...


@runtime_checkable
class ModulesRequester(Protocol):
    """A live source that can ask the job's agents to time their modules (`m`)."""

    def request_modules(self) -> str:
        """Ask; what was done, in words."""
        ...


class Pacer(Protocol):
    def wait(self) -> bool:
        """Block until the next tick is due; False once `stop` was called."""
        ...

    def stop(self) -> None: ...


class IntervalPacer:
    """A tick at once, then one every `interval_s` (measured from the previous tick's start)."""

    def __init__(self, interval_s: float = 1.0) -> None:
        self.interval_s = interval_s
        self._stopped = threading.Event()
        self._last_s: float | None = None

    def wait(self) -> bool:
        if self._last_s is not None:
            remaining_s = self.interval_s - (time.monotonic() - self._last_s)
            if remaining_s > 0 and self._stopped.wait(remaining_s):
                return False
        self._last_s = time.monotonic()
        return not self._stopped.is_set()

    def stop(self) -> None:
        self._stopped.set()


class FrameMessage(Message):
    """A new frame for the panels, posted by the tick thread."""

    def __init__(self, frame: Frame) -> None:
        super().__init__()
        self.frame = frame

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, FrameMessage)
