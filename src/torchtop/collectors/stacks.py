"""The `stacks` record of samples/stacks.jsonl: Python stacks of the job's processes, by py-spy.

One `py-spy dump --pid PID --json` per training process and DataLoader worker, run side by
side. Per pid because py-spy 0.4's `dump --json --subprocesses` prints the parent's threads
only (its text output has the children, but JSON is what we can read reliably). py-spy pauses
each process for the few milliseconds of a dump, so this runs every few seconds, not faster.

`native=True` (attach, Linux) samples the training processes with `py-spy record --native` in
back-to-back chunks instead (`collectors.profiles`): a record per chunk, a thread entry per
sample, each with its compiled frames (libtorch, gloo, libgomp) beside its Python frames, and
every OS thread's name and CPU time read from /proc (`collectors.tasks`), since py-spy shows
only threads that run Python. Where native sampling fails for a reason other than permission
(a py-spy built without unwinding, an unwinder that cannot read the job) while a Python dump
works, the collector falls back to Python-only dumps for good and says why in each record's
`python_only`. Each native chunk's length and rate follow a CPU budget (`collectors.pace`).

When py-spy cannot read the job (no ptrace permission, not a Python process, py-spy missing),
the collector writes one `unavailable` record with a one-line reason and stops trying. A pid
that fails while others succeed is left out from then on, and its reason is shown once in the
record's `unreadable` list.

Where a sampled thread is (DataLoader, backward, optimizer, ...) is read from these records by
`analysis.stacks`.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import msgspec
import psutil  # type: ignore[import-untyped, unused-ignore]

from torchtop.collectors.pace import BUDGET_SHARE
from torchtop.collectors.profiles import ChunkedProfiler
from torchtop.collectors.tasks import read_tasks
from torchtop.collectors.tree import JobProcess, job_tree
from torchtop.runs.records import (
    StackFrame,
    StackProcess,
    StacksSample,
    StackThread,
    Unavailable,
    Unreadable,
)

DUMPED_ROLES = ("main", "worker")
ATTEMPTS = 3  # failed dumps in a row before a pid is given up (a process still starting up)
PTRACE_HINT = (
    "run torchtop as root or as the job's user with ptrace allowed "
    "(sysctl kernel.yama.ptrace_scope=0; in a container, CAP_SYS_PTRACE)"
)


def find_py_spy() -> str | None:
    """py-spy on PATH, else beside this interpreter (a venv's bin/ that is not on PATH)."""
    found = shutil.which("py-spy")
    if found is not None:
        return found
    beside = Path(sys.executable).with_name("py-spy")
    return str(beside) if beside.is_file() else None


@dataclass(frozen=True)
class Dump:
    """One py-spy dump of one process: its threads, or why there are none."""

    pid: int
    threads: list[StackThread] | None = None
    reason: str | None = None  # set when py-spy could not read it; None with no threads: gone
    final: bool = False  # the reason will not change by trying again (no permission, no py-spy)
    chunk: StackProcess | None = None  # a native chunk's entry (`tasks_start`, `sampler`)


class StackCollector:
    """Dumps the Python stacks of the job's training processes and workers."""

    def __init__(
        self,
        root_pid: int,
        py_spy: list[str] | None = None,
        timeout_s: float = 10.0,
        native: bool = False,
        budget_share: float = BUDGET_SHARE,
    ) -> None:
        """`py_spy` is the command to run (default: `find_py_spy()`), arguments appended;
        `native`: dump compiled frames too, and every thread's CPU time (Linux only);
        `budget_share`: of one core, what the native sampler's own CPU aims under."""
        self.root_pid = root_pid
        self.timeout_s = timeout_s
        self.native = native and sys.platform.startswith("linux")
        self.python_only: str | None = None
        """Why native dumps were given up, once one failed where a Python dump worked."""
        found = find_py_spy()
        self._py_spy = py_spy if py_spy is not None else ([found] if found else None)
        self._profiler = (
            ChunkedProfiler(self._py_spy, budget_share)
            if self.native and self._py_spy is not None
            else None
        )
        self._given_up: set[int] = set()
        self._failures: dict[int, int] = {}
        self._unreported: list[Unreadable] = []
        self._sampled: dict[int, JobProcess] = {}
        """The training processes with a native chunk: one that left the tree keeps its own."""
        self._done = False

    def sample(self, only: Iterable[int] | None = None) -> StacksSample | Unavailable | None:
        """A `stacks` record (of the pids in `only`, where given); an `unavailable` record
        once when nothing can be read; else None."""
        if self._done:
            return None
        if self._py_spy is None:
            return self._unavailable("py-spy not found (pip install py-spy)")
        wanted = None if only is None else set(only)
        targets = [
            member
            for member in job_tree(self.root_pid)
            if member.role in DUMPED_ROLES
            and member.pid not in self._given_up
            and (wanted is None or member.pid in wanted)
        ]
        if self._profiler is not None and only is None:
            return self._profiled([member for member in targets if member.role == "main"])
        dumps = self._dump([member.pid for member in targets])
        self._count_failures(dumps)
        read = [(m, d) for m, d in zip(targets, dumps, strict=True) if d.threads is not None]
        if read:
            return self._stacks(read)
        if self._unreported and all(member.pid in self._given_up for member in targets):
            return self._unavailable(self._unreported[0].reason)
        return None

    def close(self) -> None:
        """Stop the native chunks in flight (py-spy would sample on to the chunk's end)."""
        if self._profiler is not None:
            self._profiler.stop()

    def _dump(self, pids: list[int]) -> list[Dump]:
        assert self._py_spy is not None
        return dump_all(self._py_spy, pids, self.timeout_s)

    def _profiled(self, mains: list[JobProcess]) -> StacksSample | Unavailable | None:
        """The training processes' finished native chunks, each restarted at once."""
        profiler = self._profiler
        assert profiler is not None
        read = self._ended_chunks(mains)
        failed: list[tuple[JobProcess, Dump]] = []
        for member in mains:
            self._sampled[member.pid] = member
            if not profiler.running(member.pid):
                profiler.start(member.pid)
                continue
            entry, stderr = profiler.finished(member.pid)
            if entry is not None:
                profiler.start(member.pid)
                read.append((member, Dump(member.pid, threads=entry.threads, chunk=entry)))
            elif stderr is not None:
                failed.append((member, _failed(member.pid, stderr)))
        self._count_failures([dump for _, dump in failed])
        retry = [(m, d) for m, d in failed if d.reason is not None and not d.final]
        if retry and not read:
            return self._python_only(retry)
        if read:
            return self._stacks(read)
        if self._unreported and all(member.pid in self._given_up for member in mains):
            return self._unavailable(self._unreported[0].reason)
        return None

    def _ended_chunks(self, mains: list[JobProcess]) -> list[tuple[JobProcess, Dump]]:
        """The last chunks of processes that left the tree (a rank that died, and that its
        launcher may restart under a new pid): py-spy ends its chunk when the process ends,
        and its samples up to the end are kept under the old pid."""
        profiler = self._profiler
        assert profiler is not None
        here = {member.pid for member in mains}
        read: list[tuple[JobProcess, Dump]] = []
        for pid in [pid for pid in profiler.pids() if pid not in here]:
            entry, stderr = profiler.finished(pid)
            member = self._sampled.get(pid)
            if entry is not None and member is not None:
                read.append((member, Dump(pid, threads=entry.threads, chunk=entry)))
            if entry is not None or stderr is not None:
                self._sampled.pop(pid, None)
        return read

    def _python_only(self, failed: list[tuple[JobProcess, Dump]]) -> StacksSample | None:
        """Where py-spy reads Python frames but not native ones, Python frames from now on."""
        assert self._py_spy is not None and self._profiler is not None
        dumps = dump_all(self._py_spy, [member.pid for member, _ in failed], self.timeout_s)
        read = [(m, d) for (m, _), d in zip(failed, dumps, strict=True) if d.threads is not None]
        if not read:
            return None
        self._profiler.stop()
        self._profiler, self.native = None, False
        self.python_only = f"py-spy --native failed, Python frames only ({failed[0][1].reason})"
        for member, _ in read:  # the failure was the mode's, not the process's
            self._given_up.discard(member.pid)
            self._failures.pop(member.pid, None)
        self._unreported = [u for u in self._unreported if u.pid not in {m.pid for m, _ in read}]
        return self._stacks(read)

    def _count_failures(self, dumps: list[Dump]) -> None:
        """Give up on a pid after a failure that will not change, or a few in a row."""
        for dump in dumps:
            if dump.reason is None:
                self._failures.pop(dump.pid, None)
                continue
            self._failures[dump.pid] = self._failures.get(dump.pid, 0) + 1
            if dump.final or self._failures[dump.pid] >= ATTEMPTS:
                self._given_up.add(dump.pid)
                self._unreported.append(Unreadable(pid=dump.pid, reason=dump.reason))

    def _stacks(self, read: list[tuple[JobProcess, Dump]]) -> StacksSample:
        record = StacksSample(
            t=time.time(),
            processes=[_process_entry(member, dump, self.native) for member, dump in read],
        )
        if self.native:
            record.native = True
        if self.python_only is not None:
            record.python_only = self.python_only
        if self._unreported:
            record.unreadable, self._unreported = self._unreported, []
        return record

    def _unavailable(self, reason: str) -> Unavailable:
        self._done = True
        return Unavailable(t=time.time(), reason=reason)


def dump_all(py_spy: list[str], pids: list[int], timeout_s: float) -> list[Dump]:
    """One dump per pid, the py-spy processes running side by side; same order as `pids`."""
    env = {**os.environ, "RUST_BACKTRACE": "0"}
    running: list[tuple[int, subprocess.Popen[bytes] | Dump]] = []
    for pid in pids:
        try:
            child = subprocess.Popen(
                [*py_spy, "dump", "--pid", str(pid), "--json"],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=env,
            )
        except OSError as error:
            reason = f"cannot run py-spy ({' '.join(py_spy)}): {error.strerror}"
            running.append((pid, Dump(pid, reason=reason, final=True)))
        else:
            running.append((pid, child))
    deadline_s = time.monotonic() + timeout_s
    return [
        child if isinstance(child, Dump) else _collect(pid, child, deadline_s)
        for pid, child in running
    ]


def _collect(pid: int, child: subprocess.Popen[bytes], deadline_s: float) -> Dump:
    try:
        out, err = child.communicate(timeout=max(0.1, deadline_s - time.monotonic()))
    except subprocess.TimeoutExpired:
        child.kill()
        child.communicate()
        return Dump(pid)  # a slow dump is skipped this time, not a reason to give up
    if child.returncode == 0:
        try:
            return Dump(pid, threads=[_thread(t) for t in _DUMP.decode(out)])
        except (ValueError, TypeError, KeyError, AttributeError):
            return Dump(pid, reason=f"py-spy printed something other than JSON for pid {pid}")
    if not psutil.pid_exists(pid):
        return Dump(pid)
    stderr = err.decode(errors="replace")
    return Dump(pid, reason=failure_reason(pid, stderr), final=_no_permission(stderr))


def _failed(pid: int, stderr: str) -> Dump:
    if not psutil.pid_exists(pid):
        return Dump(pid)
    return Dump(pid, reason=failure_reason(pid, stderr), final=_no_permission(stderr))


def failure_reason(pid: int, stderr: str) -> str:
    """One line saying why py-spy could not read `pid`, from what it printed on stderr."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    said = next((line for line in lines if line.lower().startswith(("error", "permission"))), "")
    said = said or (lines[0] if lines else "no message")
    if _no_permission(stderr):
        return f"py-spy has no ptrace permission for pid {pid}: {PTRACE_HINT}"
    if "failed to find python version" in stderr.lower():
        return f"pid {pid} is not a Python process py-spy can read ({said})"
    return f"py-spy could not read pid {pid}: {said}"


def _no_permission(stderr: str) -> bool:
    lowered = stderr.lower()
    return "permission denied" in lowered or "operation not permitted" in lowered


class _DumpFrame(msgspec.Struct):
    name: str
    filename: str
    line: int | None = None


class _DumpThread(msgspec.Struct):
    """A thread of `py-spy dump --json` (the fields read; the others are passed over)."""

    frames: list[_DumpFrame]
    thread_id: int | None = None
    os_thread_id: int | None = None
    thread_name: str | None = None
    active: bool | None = None


_DUMP = msgspec.json.Decoder(list[_DumpThread])


def _thread(raw: _DumpThread) -> StackThread:
    return StackThread(
        tid=raw.os_thread_id or raw.thread_id,
        name=raw.thread_name,
        active=raw.active,
        frames=[StackFrame(function=f.name, file=f.filename, line=f.line) for f in raw.frames],
    )


def _process_entry(member: JobProcess, dump: Dump, native: bool) -> StackProcess:
    entry = StackProcess(pid=member.pid, role=member.role, threads=dump.threads or [])
    tasks = read_tasks(member.pid) if native else None
    if tasks is not None:
        entry.tasks = list(tasks)
    if dump.chunk is not None:
        entry.tasks_start = dump.chunk.tasks_start
        entry.sampler = dump.chunk.sampler
    return entry
