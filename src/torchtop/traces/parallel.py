"""Read a big trace on two cores: a forked worker reads the first half, the reader the rest.

Both processes read the stream (a `.gz` is inflated by each, the worker only as far as its half)
and cut it into the very same pieces: `PIECE_BYTES` long, ending at the last event boundary
outside strings, found from the bytes alone (see `decode.Share`). The worker decodes the pieces
that start in the first half and stops; the reader skips those and decodes the rest. Nothing
but the result crosses between them: at the end the worker sends its columns back (pickled
numpy arrays, a few bytes per event, never the events) and the reader merges them in file order
(`ColumnBuilder.merge`); names are renumbered in sorted order after every read, so the arrays
are exactly those a single process would build.

Only on Linux, and only from a process with no other thread running (a fork copies one thread;
a lock another thread held would stay held in the child). A worker that dies or answers
nonsense raises `WorkerFailed`, and the reader reads the file again alone: the parallel path
may cost time, never a result. A format error the worker finds is reported as the reader's own.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import pickle
import signal
import struct
import sys
import threading
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

from torchtop.traces.decode import DecodeStats, EventStream, Share, TraceFormatError
from torchtop.traces.inflate import InflatingReader

if TYPE_CHECKING:  # numpy is imported by the worker itself, after the fork (see start_early)
    from torchtop.traces.columns import ColumnBuilder

GZIP_MAGIC = b"\x1f\x8b"

PARALLEL_MIN_BYTES = 12 << 20
"""Below this many (inflated) bytes a second process costs more than it saves."""

PARALLEL_MIN_GZIP_BYTES = 128 << 20
"""The same for a `.gz`, whose reader inflates the whole stream itself either way: on the
35 MB trace the worker's gain was within the noise (median 0.704 s with it, 0.702 s without,
10 runs each), so a file that size is read by one process and stays off the second core."""

PIECE_BYTES = 4 << 20
"""The pieces both processes cut: small enough to split the stream finely, big enough that
the fixed cost of each piece's grouping stays small."""

WORKERS_ENV = "TORCHTOP_READ_WORKERS"
"""1: read every trace in one process; 2: fork a worker for every file, whatever its size or
the threads running (for tests); unset: decide by size and circumstances."""

_LENGTH = struct.Struct("<q")


class WorkerFailed(RuntimeError):
    """The worker died or answered nonsense; read the file without it."""


def parallel_worth_it(inflated_bytes: int, compressed: bool = False) -> bool:
    """Whether to fork a worker for a file of this (estimated, inflated) size, here and now."""
    if not sys.platform.startswith("linux"):
        return False
    setting = os.environ.get(WORKERS_ENV, "").strip()
    if setting in ("1", "2"):
        return setting == "2"
    least = PARALLEL_MIN_GZIP_BYTES if compressed else PARALLEL_MIN_BYTES
    if inflated_bytes < least or len(os.sched_getaffinity(0)) < 2:
        return False
    return threading.active_count() == 1


def gzip_size_hint(path: Path, compressed_bytes: int) -> int:
    """The inflated size a gzip file declares in its trailer (modulo 4 GiB, so never less than
    the compressed size): good enough to decide whether to read it on two cores."""
    try:
        with path.open("rb") as raw:
            raw.seek(max(compressed_bytes - 4, 0))
            declared = int.from_bytes(raw.read(4), "little")
    except OSError:
        return compressed_bytes
    return max(declared, compressed_bytes)


SPLIT_FRACTION = 0.5
"""Where the worker's share (the first part of the file) ends. The reader has more to do
besides (it imports the analysis meanwhile, inflates a `.gz` all the way, decodes the end and
merges), but on 2 cores the two halves came out even at the middle."""


def shares(inflated_bytes: int) -> tuple[Share, Share]:
    """The worker's share (the first part of the stream) and the reader's (the rest, the end)."""
    split = int(inflated_bytes * SPLIT_FRACTION)
    return (
        Share(split=split, first=True, piece_bytes=PIECE_BYTES),
        Share(split=split, first=False, piece_bytes=PIECE_BYTES),
    )


@dataclass
class OpenTrace:
    """A trace file open for reading: its inflation running (a `.gz`) and its worker forked
    (when reading it on two cores is worth it)."""

    raw: BinaryIO
    compressed: bool
    inflater: InflatingReader | None
    worker: Worker | None

    @property
    def stream(self) -> BinaryIO:
        """What to decode: the inflated stream of a `.gz`, else the file itself."""
        return self.inflater if self.inflater is not None else self.raw  # type: ignore[return-value]

    def close(self) -> None:
        """Stop the worker (unless it answered) and the inflation, close the file."""
        if self.worker is not None:
            self.worker.abort()
        if self.inflater is not None:
            self.inflater.close()
        self.raw.close()


def open_trace(path: Path, parallel: bool) -> OpenTrace:
    """Open a trace, tell a `.gz` from a plain file, fork a worker when `parallel` and reading
    on two cores is worth it, and start inflating. Raises OSError as opening the file does."""
    size = path.stat().st_size
    raw = path.open("rb")
    worker = None
    try:
        compressed = raw.read(2) == GZIP_MAGIC
        raw.seek(0)
        inflated = gzip_size_hint(path, size) if compressed else size
        if parallel and parallel_worth_it(inflated, compressed):
            # numpy first: the reader needs it anyway, and the worker then shares it instead
            # of importing its own.
            import numpy  # noqa: F401

            worker = Worker(path, compressed, inflated)
        # After the fork: a fork copies one thread, and the worker inflates on its own.
        inflater = InflatingReader(raw) if compressed else None
    except BaseException:
        if worker is not None:
            worker.abort()
        raw.close()
        raise
    return OpenTrace(raw, compressed, inflater, worker)


_EARLY: dict[str, OpenTrace] = {}


def start_early(paths: list[str]) -> None:
    """Given one trace file, start reading it before the analysis is imported.

    Called by `analyze` first thing: a `.gz` starts inflating at once (zlib runs without the
    GIL, so it overlaps the imports), and for a file big enough to read on two cores the worker
    is forked after numpy (which it then shares) and reads while this process imports the
    rest. `read_trace` takes it over; anything odd here is left for the reader to report."""
    if len(paths) != 1:
        return
    path = Path(paths[0])
    try:
        if not path.is_file():
            return
        opened = open_trace(path, parallel=True)
    except OSError:
        return
    if opened.inflater is None and opened.worker is None:
        opened.close()  # a small plain file: nothing to start early
        return
    if not _EARLY:
        atexit.register(_discard_early)
    _EARLY[os.path.realpath(path)] = opened


def take_early_start(path: Path) -> OpenTrace | None:
    """The early start made for this file, if any (once)."""
    return _EARLY.pop(os.path.realpath(path), None) if _EARLY else None


def _discard_early() -> None:
    for opened in _EARLY.values():
        opened.close()
    _EARLY.clear()


class Worker:
    """The reader's handle on the worker: fork it, then `finish` (its result) or `abort`."""

    def __init__(self, path: Path, compressed: bool, inflated_bytes: int) -> None:
        share, self.share = shares(inflated_bytes)
        from_worker, to_reader = os.pipe()
        pid = os.fork()
        if pid == 0:  # the worker
            status = 1
            try:
                os.close(from_worker)
                _serve(path, compressed, share, to_reader)
                status = 0
            finally:
                os._exit(status)
        os.close(to_reader)
        self.pid = pid
        self._from = from_worker
        self._done = False

    def finish(self) -> tuple[ColumnBuilder, DecodeStats]:
        """The worker's columns and decode statistics, once it has read its share."""
        try:
            with os.fdopen(self._from, "rb") as answers:
                self._from = -1
                size = answers.read(_LENGTH.size)
                if len(size) != _LENGTH.size:
                    raise WorkerFailed("the worker ended without an answer")
                (length,) = _LENGTH.unpack(size)
                payload = answers.read(length)
            if len(payload) != length:
                raise WorkerFailed("the worker's answer was cut short")
            answer = pickle.loads(payload)
        except (OSError, pickle.UnpicklingError, EOFError, ValueError) as exc:
            raise WorkerFailed(str(exc)) from exc
        finally:
            self._reap()
        if answer[0] == "format":
            raise TraceFormatError(answer[1])
        if answer[0] != "ok":
            raise WorkerFailed(answer[1])
        return answer[1], answer[2]

    def abort(self) -> None:
        """Stop the worker if it is still there (an error in the reader); never raises."""
        if self._done:
            return
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGKILL)
        self._reap()

    def _reap(self) -> None:
        if self._from >= 0:
            with contextlib.suppress(OSError):
                os.close(self._from)
            self._from = -1
        if not self._done:
            self._done = True
            with contextlib.suppress(ChildProcessError):
                os.waitpid(self.pid, 0)


def _serve(path: Path, compressed: bool, share: Share, answer_fd: int) -> None:
    """The worker: read the file, decode its share of the pieces, answer with its columns."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # Ctrl-C ends the worker with the reader
    answer: tuple[object, ...]
    try:
        from torchtop.traces.columns import ColumnBuilder

        builder = ColumnBuilder()
        with path.open("rb") as raw:  # its own handle: a forked one would share the offset
            inflater = InflatingReader(raw) if compressed else None
            try:
                events = EventStream(inflater or raw, share=share)  # type: ignore[arg-type]
                for batch in events:
                    builder.add(batch, events.piece)
            finally:
                if inflater is not None:
                    inflater.close()
        answer = ("ok", builder, events.stats)
    except TraceFormatError as exc:
        answer = ("format", str(exc))
    except (OSError, zlib.error):
        # The reader reads the same bytes and reports what is wrong with them in its words.
        answer = ("error", "could not read the file")
    except BaseException as exc:  # anything else: the reader falls back to reading alone
        answer = ("error", f"{type(exc).__name__}: {exc}")
    payload = pickle.dumps(answer, protocol=pickle.HIGHEST_PROTOCOL)
    with memoryview(_LENGTH.pack(len(payload)) + payload) as view:
        while view:
            view = view[os.write(answer_fd, view) :]
