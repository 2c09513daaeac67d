"""Read a big trace on two cores: a forked worker decodes every other piece of the file.

The reader cuts the event array into pieces as it always does; the odd-numbered ones go to a
worker process, forked before reading starts, which decodes them into its own `ColumnBuilder`.
At the end its columns come back (pickled numpy arrays: a few bytes per event, not the events)
and are merged in file order, so the result is the one a single process would get (see
`ColumnBuilder.merge` and `canonical_order`).

Pieces of a plain file travel as (offset, length): the worker reads them through its own file
handle. Pieces of a `.gz` stream, inflated once by the reader, travel through the pipe.

Only on Linux, and only from a process with no other thread running (a fork copies one thread;
a lock another thread held would stay held in the child). Any failure of the worker raises
`WorkerFailed`, and the reader reads the file again alone: the parallel path may cost time,
never a result. A file format error found by the worker is reported like the reader's own.
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
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

from torchtop.traces.decode import DecodeStats, PieceDecoder, TraceFormatError
from torchtop.traces.inflate import InflatingReader

if TYPE_CHECKING:  # numpy is imported by the worker itself, after the fork (see start_early)
    from torchtop.traces.columns import ColumnBuilder

GZIP_MAGIC = b"\x1f\x8b"

PARALLEL_MIN_BYTES = 12 << 20
"""Below this many (inflated) bytes a second process costs more than it saves."""

WORKERS_ENV = "TORCHTOP_READ_WORKERS"
"""1: read every trace in one process; 2: fork a worker for every file, whatever its size or
the threads running (for tests); unset: decide by size and circumstances."""

_HEADER = struct.Struct("<qqqq")  # piece (-1: no more), stream offset, length, bytes follow
_LENGTH = struct.Struct("<q")
_F_SETPIPE_SZ = 1031
_PIPE_BYTES = 1 << 20


class WorkerFailed(RuntimeError):
    """The worker died or answered nonsense; read the file without it."""


def parallel_worth_it(inflated_bytes: int) -> bool:
    """Whether to fork a worker for a file of this (estimated, inflated) size, here and now."""
    if not sys.platform.startswith("linux"):
        return False
    setting = os.environ.get(WORKERS_ENV, "").strip()
    if setting in ("1", "2"):
        return setting == "2"
    if inflated_bytes < PARALLEL_MIN_BYTES or len(os.sched_getaffinity(0)) < 2:
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


@dataclass
class EarlyStart:
    """A trace file already open, its worker forked and its inflation running."""

    raw: BinaryIO
    compressed: bool
    inflater: InflatingReader | None
    worker: PieceWorker


_EARLY: dict[str, EarlyStart] = {}


def start_early(paths: list[str]) -> None:
    """Given one big trace file, fork the worker and start inflating it right away.

    Called by `analyze` before it imports numpy and the analysis: the worker imports its own
    while this process imports, and a `.gz` inflates (zlib runs without the GIL) during the
    imports instead of after them. `read_trace` takes it over; anything odd here is left for
    the reader to find and report."""
    if len(paths) != 1:
        return
    path = Path(paths[0])
    try:
        if not path.is_file():
            return
        size = path.stat().st_size
        with path.open("rb") as probe:
            compressed = probe.read(2) == GZIP_MAGIC
        if not parallel_worth_it(gzip_size_hint(path, size) if compressed else size):
            return
        raw = path.open("rb")
    except OSError:
        return
    worker = PieceWorker(None if compressed else path)
    inflater = InflatingReader(raw) if compressed else None
    if not _EARLY:
        atexit.register(_discard_early)
    _EARLY[os.path.realpath(path)] = EarlyStart(raw, compressed, inflater, worker)


def take_early_start(path: Path) -> EarlyStart | None:
    """The early start made for this file, if any (once)."""
    return _EARLY.pop(os.path.realpath(path), None) if _EARLY else None


def _discard_early() -> None:
    for early in _EARLY.values():
        early.worker.abort()
        if early.inflater is not None:
            early.inflater.close()
        early.raw.close()
    _EARLY.clear()


class PieceWorker:
    """The reader's side of the worker: `wants`/`send` (an `EventStream` remote), `finish`."""

    def __init__(self, plain_file: Path | None) -> None:
        """`plain_file`: the file, when the worker can read pieces from it itself (not gzip)."""
        from_reader, to_worker = os.pipe()
        from_worker, to_reader = os.pipe()
        with contextlib.suppress(OSError):
            import fcntl

            fcntl.fcntl(to_worker, _F_SETPIPE_SZ, _PIPE_BYTES)
        pid = os.fork()
        if pid == 0:  # the worker
            status = 1
            try:
                os.close(to_worker)
                os.close(from_worker)
                _serve(from_reader, to_reader, plain_file)
                status = 0
            finally:
                os._exit(status)
        os.close(from_reader)
        os.close(to_reader)
        self.pid = pid
        self._to = to_worker
        self._from = from_worker
        self._inline = plain_file is None
        self._done = False

    def wants(self, piece: int) -> bool:
        return piece % 2 == 1

    def send(self, piece: int, buf: bytearray, cut: int, offset: int) -> None:
        length = cut - 1
        self._write(_HEADER.pack(piece, offset, length, int(self._inline)))
        if self._inline:
            with memoryview(buf) as view:
                self._write(view[1:cut])

    def finish(self) -> tuple[ColumnBuilder, DecodeStats]:
        """The worker's columns and decode statistics, once it has decoded every piece."""
        self._write(_HEADER.pack(-1, 0, 0, 0))
        os.close(self._to)
        self._to = -1
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
        for fd in (self._to, self._from):
            if fd >= 0:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self._to = self._from = -1
        if not self._done:
            self._done = True
            with contextlib.suppress(ChildProcessError):
                os.waitpid(self.pid, 0)

    def _write(self, data: bytes | memoryview) -> None:
        try:
            with memoryview(data) as view:
                while view:
                    written = os.write(self._to, view)
                    view = view[written:]
        except OSError as exc:  # BrokenPipeError: the worker is gone
            raise WorkerFailed(f"the worker stopped reading ({exc})") from exc


def _serve(incoming_fd: int, outgoing_fd: int, plain_file: Path | None) -> None:
    """The worker's loop: decode each piece it is sent, then answer with its columns."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # Ctrl-C ends the worker with the reader
    from torchtop.traces.columns import ColumnBuilder

    builder = ColumnBuilder()
    stats = DecodeStats()
    decoder = PieceDecoder(stats)
    answer: tuple[object, ...]
    try:
        source = plain_file.open("rb", buffering=0) if plain_file is not None else None
        with os.fdopen(incoming_fd, "rb") as incoming:
            while True:
                piece, offset, length, inline = _HEADER.unpack(_exactly(incoming, _HEADER.size))
                if piece < 0:
                    break
                # '[' + the piece + ',' : decoded in place as the reader decodes its own.
                buf = bytearray(length + 2)
                with memoryview(buf) as view:
                    if inline:
                        _fill(incoming, view[1 : length + 1])
                    elif source is not None:
                        source.seek(offset)
                        _fill(source, view[1 : length + 1])
                buf[length + 1] = 0x2C
                events = decoder.decode_in_place(buf, length + 1)
                if events is None:
                    raise TraceFormatError(f"malformed JSON in the event array near byte {offset}")
                builder.add(events, piece)
        answer = ("ok", builder, stats)
    except TraceFormatError as exc:
        answer = ("format", str(exc))
    except BaseException as exc:  # anything else: the reader falls back to reading alone
        answer = ("error", f"{type(exc).__name__}: {exc}")
    payload = pickle.dumps(answer, protocol=pickle.HIGHEST_PROTOCOL)
    with memoryview(_LENGTH.pack(len(payload)) + payload) as view:
        while view:
            view = view[os.write(outgoing_fd, view) :]


def _exactly(stream: object, size: int) -> bytes:
    data: bytes = stream.read(size)  # type: ignore[attr-defined]
    if len(data) != size:
        raise EOFError("the reader went away")
    return data


def _fill(stream: object, view: memoryview) -> None:
    while view:
        got = stream.readinto(view)  # type: ignore[attr-defined]
        if not got:
            raise EOFError("the piece ends early")
        view = view[got:]
