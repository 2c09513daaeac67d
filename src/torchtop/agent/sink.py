"""Where the agent's records go: its own `events/agent-<pid>.jsonl`, steps batched.

A step record is kept in memory until 50 ms have passed since the last write, then all the
kept steps are written, each still its own line; a job doing thousands of steps a second makes
twenty bursts of writes a second instead of thousands, and a job with slower steps writes each
one as it ends. Any other record is written at once, after the steps before it, so the file
stays in time order. A note is written once per key, however often its cause repeats.

A sink may also hold everything until the first step: a process that multiprocessing started
(a DataLoader worker, most often) then writes nothing, not even its file, unless it turns out
to train (a `torch.multiprocessing.spawn` rank).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from torchtop.runs.records import JournalRecord, Step

STEP_FLUSH_EVERY_S = 0.05


class RecordWriter(Protocol):
    def write(self, record: JournalRecord) -> None: ...

    def close(self) -> None: ...


class RecordSink:
    """Records in, file out; the file is opened (by `open_writer`) at the first real write."""

    def __init__(
        self,
        open_writer: Callable[[], RecordWriter],
        flush_every_s: float = STEP_FLUSH_EVERY_S,
        hold_until_step: bool = False,
    ) -> None:
        self._open_writer = open_writer
        self._writer: RecordWriter | None = None
        self._flush_every_s = flush_every_s
        self.holding = hold_until_step
        self._pending: list[JournalRecord] = []
        self._last_flush_s: float | None = None
        self._noted: set[str] = set()
        self.closed = False

    def add_step(self, record: Step, now_s: float) -> None:
        """Keep a step record; write the kept ones if the last write is old enough."""
        self.holding = False
        self._pending.append(record)
        if self._last_flush_s is None or now_s - self._last_flush_s >= self._flush_every_s:
            self.flush(now_s)

    def write(self, record: JournalRecord) -> None:
        if self.holding:
            self._pending.append(record)
            return
        self.flush(self._last_flush_s)
        self._write(record)

    def note_once(self, key: str, record: JournalRecord) -> None:
        if key not in self._noted:
            self._noted.add(key)
            self.write(record)

    def flush(self, now_s: float | None) -> None:
        if self._pending and not self.holding:
            pending, self._pending = self._pending, []
            for record in pending:
                self._write(record)
        if now_s is not None:
            self._last_flush_s = now_s

    def close(self) -> None:
        """Write what is kept (unless still holding: then nothing at all) and close."""
        self.flush(None)
        self.closed = True
        if self._writer is not None:
            self._writer.close()
            self._writer = None

    def _write(self, record: JournalRecord) -> None:
        if self.closed:
            return
        if self._writer is None:
            self._writer = self._open_writer()
        self._writer.write(record)
