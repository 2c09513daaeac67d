"""Read a big trace on two cores: a forked worker reads the first part, the reader the rest.

Both processes read the stream (a `.gz` is inflated by each, the worker only as far as its part)
and cut it into the very same pieces: `PIECE_BYTES` long, ending at the last event boundary
outside strings, found from the bytes alone (see `decode.Share`). The worker decodes the pieces
that start before the split and stops; the reader skips those and decodes the rest. Nothing
but the result crosses between them: at the end the worker sends its columns back (pickled
numpy arrays, a few bytes per event, never the events) and the reader merges them in file order
(`ColumnBuilder.merge`); names are renumbered in sorted order after every read, so the arrays
are exactly those a single process would build.

`analyze` forks the worker first thing (`start_early`), before anything heavy is imported: the
worker imports what reading needs and starts on the file while the reader imports the analysis,
so the worker takes the bigger part (`worker_split`). This module therefore imports nothing
beyond the standard library at its top.

Only on Linux, and only from a process with no other thread running (a fork copies one thread;
a lock another thread held would stay held in the child). A worker that dies or answers
nonsense raises `WorkerFailed`, and the reader reads the file again alone: the parallel path
may cost time, never a result. A format error the worker finds is reported as the reader's own.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import sys
import threading
import zlib
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

from torchtop.traces.inflate import InflatingReader

if TYPE_CHECKING:  # imported after the fork, by whichever process needs them
    from torchtop.traces.columns import ColumnBuilder
    from torchtop.traces.decode import DecodeStats, Share

GZIP_MAGIC = b"\x1f\x8b"

PARALLEL_MIN_BYTES = 12 << 20
"""Below this many (inflated) bytes a second process costs more than it saves."""

PARALLEL_MIN_GZIP_BYTES = 128 << 20
"""The same for a `.gz` whose worker is forked after the imports (several files, `view`): the
reader inflates the whole stream itself either way, and on the 35 MB trace such a worker's gain
was within the noise (median 0.704 s with it, 0.702 s without, 10 runs each)."""

EARLY_MIN_BYTES = 12 << 20
"""The least size of a plain file for which `analyze` forks the worker before its imports: the
worker then reads while the reader imports. Measured on 2 cores (21 or 11 alternating runs):
the 35 MB sample inflated to a plain file, 0.48 s against 0.53 s alone; a 54 MB one, 0.82 s
against 0.98 s."""

EARLY_MIN_GZIP_BYTES = 48 << 20
"""The same for a `.gz` (its inflated size), whose two readers each inflate the stream up to
their part: the 35 MB sample's `.gz` gained within the noise (0.618 s against 0.631 s) for
0.35 s more CPU on the other core, and a 54 MB one gained 9% (0.99 s against 1.09 s)."""

PIECE_BYTES = 2 << 20
"""The pieces both processes cut: small enough to split the stream finely and stay in memory
already touched (as `decode.BLOCK_BYTES`), big enough that the fixed cost of each piece's
grouping stays small (the 1 GB trace: 4.4-5.6 s with 2 MB pieces, 5.1-5.6 s with 4 MB)."""

HEAD_START_BYTES = 14 << 20
"""How much more of the stream a worker forked before the imports (`start_early`) is given to
read: while it imports numpy and msgspec, the reader imports those and the whole analysis and
parses the rules, which took about as long as reading 14 MB of trace (2-core Xeon: ~100 ms
more than the worker's imports, against ~7 ms per MB read)."""

MAX_WORKER_SHARE = 0.9
"""The worker never takes more than this share: the reader must have some of its own to read
while the worker sends its columns."""

WORKERS_ENV = "TORCHTOP_READ_WORKERS"
"""1: read every trace in one process; 2: fork a worker for every file, whatever its size or
the threads running (for tests); unset: decide by size and circumstances."""

_END = b"."
"""Written after the pickled answer: a worker that dies while writing leaves it out."""


class WorkerFailed(RuntimeError):
    """The worker died or answered nonsense; read the file without it."""


def fork_choice() -> bool | None:
    """Whether this process may fork reading workers, before any size is weighed: False where
    it cannot or should not (not Linux, `TORCHTOP_READ_WORKERS=1`, one core, another thread
    running), True where `TORCHTOP_READ_WORKERS=2` forces it, None where the size decides.
    The one policy of the worker here and of `fanout`'s pool."""
    if not sys.platform.startswith("linux"):
        return False
    setting = os.environ.get(WORKERS_ENV, "").strip()
    if setting in ("1", "2"):
        return setting == "2"
    if len(os.sched_getaffinity(0)) < 2 or threading.active_count() != 1:
        return False
    return None


def parallel_worth_it(inflated_bytes: int, compressed: bool = False, early: bool = False) -> bool:
    """Whether to fork a worker for a file of this (estimated, inflated) size, here and now;
    `early`: forked by `start_early`, before the imports."""
    choice = fork_choice()
    if choice is not None:
        return choice
    if early:
        least = EARLY_MIN_GZIP_BYTES if compressed else EARLY_MIN_BYTES
    else:
        least = PARALLEL_MIN_GZIP_BYTES if compressed else PARALLEL_MIN_BYTES
    return inflated_bytes >= least


def sniff(raw: BinaryIO, size: int) -> tuple[bool, int]:
    """Whether an open trace file (`size` bytes) is a `.gz`, and its inflated size: for a `.gz`
    the size its trailer declares (modulo 4 GiB, so never less than the compressed size), good
    enough to decide how to read it. Leaves the file at its start."""
    compressed = raw.read(2) == GZIP_MAGIC
    inflated = size
    if compressed:
        raw.seek(max(size - 4, 0))
        inflated = max(int.from_bytes(raw.read(4), "little"), size)
    raw.seek(0)
    return compressed, inflated


def inflated_size(path: Path) -> int:
    """A trace file's size once inflated (`sniff`); 0 when it cannot be read (its reader says
    why, in its words)."""
    try:
        with path.open("rb") as raw:
            return sniff(raw, os.fstat(raw.fileno()).st_size)[1]
    except OSError:
        return 0


def worker_split(inflated_bytes: int, head_start_bytes: int = 0) -> int:
    """Where the worker's part (the start of the stream) ends.

    The two parts take equally long when the worker, which starts `head_start_bytes` of
    reading ahead, gets half the stream plus half its head start. Without one (a worker forked
    after the imports) that is the middle: the reader has more to do besides (it inflates a
    `.gz` all the way, decodes the end and merges), but on 2 cores the halves came out even."""
    return int(min((inflated_bytes + head_start_bytes) / 2, inflated_bytes * MAX_WORKER_SHARE))


class OpenTrace:
    """A trace file open for reading: its inflation running (a `.gz`) and its worker forked
    (when reading it on two cores is worth it)."""

    def __init__(
        self,
        raw: BinaryIO,
        compressed: bool,
        inflater: InflatingReader | None,
        worker: Worker | None,
    ) -> None:
        self.raw = raw
        self.compressed = compressed
        self.inflater = inflater
        self.worker = worker

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


def open_trace(path: Path, parallel: bool, early: bool = False) -> OpenTrace:
    """Open a trace, tell a `.gz` from a plain file, fork a worker when `parallel` and reading
    on two cores is worth it, and start inflating. Raises OSError as opening the file does.

    `early`: called before the imports (`start_early`), so the worker gets a head start."""
    size = path.stat().st_size
    raw = path.open("rb")
    worker = None
    try:
        compressed, inflated = sniff(raw, size)
        if parallel and parallel_worth_it(inflated, compressed, early):
            head_start = HEAD_START_BYTES if early else 0
            worker = Worker(path, compressed, worker_split(inflated, head_start))
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

    Called by `analyze` first thing: for a file big enough to read on two cores the worker is
    forked at once and reads while this process imports the rest, and a `.gz` starts inflating
    (zlib runs without the GIL, so it overlaps the imports). `read_trace` takes it over;
    anything odd here is left for the reader to report."""
    if len(paths) != 1:
        return
    path = Path(paths[0])
    try:
        if not path.is_file():
            return
        opened = open_trace(path, parallel=True, early=True)
    except OSError:
        return
    if opened.inflater is None and opened.worker is None:
        opened.close()  # a small plain file: nothing to start early
        return
    if not _EARLY:
        atexit.register(discard_early_starts)
    _EARLY[os.path.realpath(path)] = opened


def take_early_start(path: Path) -> OpenTrace | None:
    """The early start made for this file, if any (once)."""
    return _EARLY.pop(os.path.realpath(path), None) if _EARLY else None


def discard_early_starts() -> None:
    """Stop every early start nobody took (run at exit, or by a CLI that exits without it)."""
    for opened in _EARLY.values():
        opened.close()
    _EARLY.clear()


class Worker:
    """The reader's handle on the worker: fork it, then `finish` (its result) or `abort`."""

    def __init__(self, path: Path, compressed: bool, split: int) -> None:
        self.split = split
        from_worker, to_reader = os.pipe()
        pid = os.fork()
        if pid == 0:  # the worker
            status = 1
            try:
                os.close(from_worker)
                _serve(path, compressed, split, to_reader)
                status = 0
            finally:
                os._exit(status)
        os.close(to_reader)
        self.pid = pid
        self._from = from_worker
        self._done = False

    @property
    def share(self) -> Share:
        """The reader's share of the file: the pieces from the split on, and the end."""
        from torchtop.traces.decode import Share

        return Share(split=self.split, first=False, piece_bytes=PIECE_BYTES)

    def finish(self) -> tuple[ColumnBuilder, DecodeStats]:
        """The worker's columns and decode statistics, once it has read its share."""
        import pickle

        from torchtop.traces.decode import TraceFormatError

        try:
            with os.fdopen(self._from, "rb") as answers:
                self._from = -1
                # Unpickled as it arrives: the answer is never held as bytes besides.
                answer = pickle.load(answers)
                if isinstance(answer, tuple) and answer[:1] == ("ok",):
                    _fill(answer[1], answers)
                if answers.read(1) != _END:
                    raise WorkerFailed("the worker's answer was cut short")
        except (OSError, pickle.UnpicklingError, EOFError, ValueError, TypeError) as exc:
            raise WorkerFailed(str(exc) or type(exc).__name__) from exc
        finally:
            self._reap()
        if not isinstance(answer, tuple) or not answer:
            raise WorkerFailed("the worker answered nonsense")
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


def _serve(path: Path, compressed: bool, split: int, answer_fd: int) -> None:
    """The worker: read the file, decode its share of the pieces, answer with its columns."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # Ctrl-C ends the worker with the reader
    answer: tuple[object, ...]
    try:
        # Imported here, after the fork: an early worker imports them while the reader does.
        from torchtop.traces.columns import ColumnBuilder
        from torchtop.traces.decode import EventStream, Share

        share = Share(split=split, first=True, piece_bytes=PIECE_BYTES)
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
    except BaseException as exc:
        answer = _failure(exc)
    with os.fdopen(answer_fd, "wb") as pipe:
        pickle_answer(answer, pipe)
        pipe.write(_END)


def pickle_answer(answer: tuple[object, ...], pipe: BinaryIO) -> None:
    """Pickle the worker's answer straight into the pipe: each array's bytes are written from
    the array itself, so the answer is never held twice (as one payload it was the worker's
    columns over again, and the reader's copy of them a third time). The builder goes first
    without its columns' parts, then each column's parts, let go once written: the worker's
    memory falls as the reader's grows."""
    import pickle

    if answer[0] != "ok":
        pickle.dump(answer, pipe, protocol=pickle.HIGHEST_PROTOCOL)
        return
    from torchtop.traces.heap import release_freed_memory

    held = answer[1].take_parts()  # type: ignore[attr-defined]
    pickle.dump(answer, pipe, protocol=pickle.HIGHEST_PROTOCOL)
    for parts in held:
        pickle.dump(parts, pipe, protocol=pickle.HIGHEST_PROTOCOL)
        parts.clear()
        release_freed_memory()  # the parts were heap blocks: freed, they would stay resident


def _fill(builder: ColumnBuilder, answers: BinaryIO) -> None:
    """Put back the parts the worker sent after its builder (`pickle_answer`)."""
    import pickle

    for slot in builder.part_slots():
        parts = pickle.load(answers)
        if not isinstance(parts, list):
            raise WorkerFailed("the worker answered nonsense")
        slot.extend(parts)


def _failure(exc: BaseException) -> tuple[str, str]:
    """The worker's answer when its reading failed."""
    decode = sys.modules.get("torchtop.traces.decode")
    if decode is not None and isinstance(exc, decode.TraceFormatError):
        return ("format", str(exc))
    if isinstance(exc, OSError | zlib.error):
        # The reader reads the same bytes and reports what is wrong with them in its words.
        return ("error", "could not read the file")
    return ("error", f"{type(exc).__name__}: {exc}")  # the reader falls back to reading alone
