"""A daemon thread that calls one collector on a fixed schedule and journals what it returns.

The schedule is drift-free: the k-th call is due at start + k * interval, so a slow sample does
not push every later one back; when a call overruns whole intervals, the missed ticks are
skipped rather than bunched up. Waiting is on an Event, so `stop()` returns as soon as the
current call finishes. A collector that raises is reported once, as a `note` record, and then
kept running (the next sample may succeed); one that returns an `unavailable` record is done,
and the thread ends after writing it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping

import msgspec

from torchtop.runs.journal import JournalWriter
from torchtop.runs.records import Note, SampleRecord, Unavailable

SampleFn = Callable[[], SampleRecord | Mapping[str, object] | None]
"""A collector: its record, or the table of one (checked against the schema when written), or
None when it has nothing to say this time."""


class Sampler:
    """Runs `sample_fn` every `interval_s` seconds on a daemon thread named `torchtop-<name>`.

    `sample_fn` returns a record to write, or None when there is nothing to write this time.
    """

    def __init__(
        self,
        name: str,
        interval_s: float,
        sample_fn: SampleFn,
        writer: JournalWriter,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if interval_s <= 0:
            raise ValueError(f"interval_s must be positive, not {interval_s}")
        self.name = name
        self.interval_s = interval_s
        self.records_written = 0
        self._sample_fn = sample_fn
        self._writer = writer
        self._clock = clock
        self._stopping = threading.Event()
        self._reported_error = False
        self._thread = threading.Thread(target=self._run, name=f"torchtop-{name}", daemon=True)

    def start(self) -> Sampler:
        self._thread.start()
        return self

    def stop(self, timeout_s: float = 5.0) -> None:
        """Ask the thread to end and wait for it (at most `timeout_s`: a sample in flight)."""
        self._stopping.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout_s)

    @property
    def running(self) -> bool:
        return self._thread.is_alive()

    def _run(self) -> None:
        due_s = self._clock()
        while not self._stopping.is_set():
            record = self._sample_once()
            if record is not None and not self._write(record):
                return
            if isinstance(record, Unavailable):
                return
            due_s = self._next_due(due_s)
            if self._stopping.wait(max(0.0, due_s - self._clock())):
                return

    def _next_due(self, due_s: float) -> float:
        due_s += self.interval_s
        now_s = self._clock()
        if due_s < now_s:
            missed = int((now_s - due_s) // self.interval_s) + 1
            due_s += missed * self.interval_s
        return due_s

    def _sample_once(self) -> SampleRecord | None:
        """The collector's record, checked against the run folder's schema (a record that
        breaks it is a collector bug, reported as one)."""
        try:
            record = self._sample_fn()
            return None if record is None else msgspec.convert(record, SampleRecord)
        except Exception as error:  # a collector bug must not end the run's recording
            if self._reported_error:
                return None
            self._reported_error = True
            detail = " ".join(str(error).split())  # one line, whatever the error said
            message = f"{self.name} sampler failed: {type(error).__name__}: {detail}"
            return Note(t=time.time(), message=message)

    def _write(self, record: SampleRecord) -> bool:
        try:
            self._writer.write(record)
        except (OSError, ValueError):
            # disk full or the writer closed under us: nothing left to record with
            return False
        self.records_written += 1
        return True
