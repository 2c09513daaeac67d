"""Where a job's training threads are, over its recent stack records: shares of samples by place.

Each sample is one look at a training process's main thread (a dump holds one, a native chunk
one per sample). Its Python frames say which part of the loop it is in
(`analysis.stacks.classify_stack`: DataLoader, forward, backward, optimizer, a collective
call); where the record is native, the compiled frames under its innermost Python line say what
that line's call is doing (`diagnosis.frames`: a copy, a collective or its wait, a device sync,
an OpenMP barrier, the inside of an operator, or compiled code between operators), and a thread
with no compiled frame there is running Python itself. The DataLoader wins over everything (its
copies are input time); a copy, collective or sync seen in the compiled frames wins over the
Python place it runs under. A main thread asleep in backward while one of the process's
communication threads (gloo's, by name) used CPU during the same chunk is waiting on that
collective. The inputs are plain records, so one process's shares are those of its records
alone (`shares_of(records, pid=...)`), for a per-rank view.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import msgspec

from torchtop.analysis.stacks import classify_stack
from torchtop.diagnosis.frames import BETWEEN, OP, FramePatterns
from torchtop.runs.records import StackProcess, StacksSample, StackThread, TaskTime

POOL_MIN_SHARE = 0.1
"""A thread counts in the intra-op pool when it used at least this share of the main
thread's CPU time over the same span."""
INTERPRETER = "interpreter"
"""A native sample with no compiled frame under the Python line: Python itself is running."""


@dataclass(frozen=True)
class StackShares:
    """Shares (0-1) of the main threads' samples by place, and what the dumps held."""

    shares: dict[str, float]
    samples: int
    native: bool
    """Every counted sample came from a native dump."""
    intra_op_threads: int | None = None
    """The training process's compute threads in the newest native dump (see `pool_size`)."""
    notes: tuple[str, ...] = field(default=())


def shares_of(
    records: Iterable[StacksSample], patterns: FramePatterns, pid: int | None = None
) -> StackShares:
    """The shares over `records` (oldest first) of every main process, or of `pid` alone."""
    counts: dict[str, int] = {}
    native = True
    previous: dict[int, StackProcess] = {}
    pool: int | None = None
    notes: list[str] = []
    for record in records:
        if record.python_only is not msgspec.UNSET and record.python_only not in notes:
            notes.append(record.python_only)
        for process in record.processes:
            if process.role != "main" or (pid is not None and process.pid != pid):
                continue
            before = _tasks_before(process, previous.get(process.pid))
            previous[process.pid] = process
            # A native record holds the main thread once per sample of its chunk.
            mains = [t for t in process.threads if t.tid == process.pid]
            busy = _communication_busy(before, process, patterns)
            for main in mains:
                place = thread_place(main, patterns, record.native is True, busy)
                counts[place] = counts.get(place, 0) + 1
            native = native and (record.native is True or not mains)
            if record.native is True:
                pool = pool_size(before, process)
    total = sum(counts.values())
    shares = {place: n / total for place, n in sorted(counts.items())} if total else {}
    return StackShares(shares, total, native and total > 0, pool, tuple(notes))


def thread_place(
    thread: StackThread, patterns: FramePatterns, native: bool, comm_busy: bool = False
) -> str:
    """The place of one sample of a main thread (see the module's docstring)."""
    python = classify_stack(thread.frames, thread.active)
    if not native:
        return python
    frames = [] if thread.native is msgspec.UNSET else thread.native
    compiled = patterns.place([(f.function, f.library) for f in frames])
    if python == "dataloader":
        return python
    if compiled in ("collective", "sync", "copy"):
        return compiled
    if python in ("collective", "sync"):
        return python
    if python == "backward" and thread.active is False and comm_busy:
        return "collective"
    if compiled is None:
        return INTERPRETER if thread.active is not False else "idle"
    # The autograd engine's own loop, outside a node, is time between operators.
    return compiled if compiled in ("openmp", OP) else BETWEEN


def pool_size(before: Sequence[TaskTime] | None, now: StackProcess) -> int | None:
    """The process's compute threads: its main thread and the OS threads that carry the main
    thread's name, run no Python and used CPU between `before` and `now`'s tasks. GNU
    OpenMP's pool threads are named after the thread that made them and work at every
    parallel operator, so in a training loop this is the intra-op thread count the job set
    (`torch.set_num_threads`); libtorch names its other threads (`pt_...`, `gloo_...`), and a
    helper thread started at import sleeps. None without two readings of /proc."""
    if before is None or isinstance(now.tasks, msgspec.UnsetType):
        return None
    name = next((t.name for t in now.tasks if t.tid == now.pid), None)
    if name is None:
        return None
    python = {t.tid for t in now.threads}
    earlier = {t.tid: t.cpu_s for t in before}
    used = {t.tid: t.cpu_s - earlier.get(t.tid, 0.0) for t in now.tasks}
    # A pool thread works at every parallel operator, as the main thread does; a helper
    # that wakes now and then (a clock tick of CPU) is no compute thread.
    enough_s = max(POOL_MIN_SHARE * used.get(now.pid, 0.0), 1e-9)
    return 1 + sum(
        t.name == name and t.tid not in python and used[t.tid] >= enough_s
        for t in now.tasks
        if t.tid != now.pid
    )


def _tasks_before(process: StackProcess, previous: StackProcess | None) -> list[TaskTime] | None:
    """The process's threads as this record's samples began: read then (a native chunk), or
    as the previous record ended."""
    if not isinstance(process.tasks_start, msgspec.UnsetType):
        return process.tasks_start
    if previous is None or isinstance(previous.tasks, msgspec.UnsetType):
        return None
    return previous.tasks


def _communication_busy(
    before: Sequence[TaskTime] | None, now: StackProcess, patterns: FramePatterns
) -> bool:
    """Whether a communication thread of `now` used CPU since `before`."""
    names = patterns.communication_threads
    if before is None or names is None or isinstance(now.tasks, msgspec.UnsetType):
        return False
    earlier = {t.tid: t.cpu_s for t in before}
    return any(
        names.search(t.name) is not None and t.cpu_s > earlier.get(t.tid, t.cpu_s)
        for t in now.tasks
    )
