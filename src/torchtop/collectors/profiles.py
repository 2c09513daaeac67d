"""Native stack samples of a job's training processes, by `py-spy record --native` in chunks.

A native `py-spy dump` spends 2-6 s on this 2-core machine loading libtorch's symbols before
it reads one stack, so a dump loop gave attach one look every few seconds. `py-spy record`
loads them once per chunk and then samples at `rate_per_s`: each chunk of `chunk_s` seconds is
one `stacks` record holding every sample of every Python thread (a thread appears once per
sample, innermost frame first, as a dump's thread does). Chunks run back to back in the
background: `finished()` gives a finished chunk's process entry, and the caller starts the next.
Each process has its own `collectors.pace.Pace`: short chunks first, then chunks as long as
keeps py-spy's own CPU (read from the finished child's rusage) under a budget; the entry's
`sampler` says the chunk's length, rate and CPU.

The speedscope output keeps each thread's samples in time order with their frames; py-spy
writes a compiled frame with line 0 and its shared object as the file. Idle samples are kept
(`--idle`): a thread blocked in a collective is the evidence. py-spy's speedscope output does
not say which samples were idle, so a sample is active unless its innermost compiled frames
are the C library's waits (`WAITS`): futexes, condition variables, sleeps, polls.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
import time
import weakref
from dataclasses import dataclass
from pathlib import Path

import msgspec

from torchtop.collectors.pace import BUDGET_SHARE, Pace
from torchtop.collectors.tasks import read_tasks
from torchtop.runs.records import (
    NATIVE_NAME_CHARS,
    NativeFrame,
    SamplerPace,
    StackFrame,
    StackProcess,
    StackThread,
    TaskTime,
)

WAITS = re.compile(
    r"^(pthread_cond_(timed)?wait|__futex|futex|syscall|clock_nanosleep|nanosleep|epoll_wait|"
    r"poll|ppoll|select|pselect|sem_(timed)?wait|__lll_lock_wait|read|recv|recvfrom|accept|0x)"
)
"""Innermost C-library frames of a thread that waits (a bare address in libc is where a
futex or a read blocks: their symbols are internal)."""
_C_LIBRARY = re.compile(r"^(libc\.so|libpthread)")
_THREAD = re.compile(r'Thread (?:0x)?([0-9a-fA-F]+) "(.*)"$')


class _Frame(msgspec.Struct):
    """A frame of py-spy's speedscope output: compiled ones have line 0 and the library as file."""

    name: str
    file: str
    line: int | None = None


class _Shared(msgspec.Struct):
    frames: list[_Frame]


class _Thread(msgspec.Struct):
    samples: list[list[int]]
    """Each sample's frames by index into the shared frames, outermost first."""
    name: str = ""


class _Speedscope(msgspec.Struct):
    shared: _Shared
    profiles: list[_Thread]


@dataclass
class Chunk:
    pid: int
    process: subprocess.Popen[bytes]
    output: Path
    tasks_start: list[TaskTime] | None
    chunk_s: int
    rate_per_s: int


class ChunkedProfiler:
    """Back-to-back `py-spy record --native` chunks of each training process."""

    def __init__(self, py_spy: list[str], budget_share: float = BUDGET_SHARE) -> None:
        self.py_spy, self.budget_share = py_spy, budget_share
        self._running: dict[int, Chunk] = {}
        self._paces: dict[int, Pace] = {}
        self._folder = Path(tempfile.mkdtemp(prefix="torchtop-stacks-"))
        weakref.finalize(self, shutil.rmtree, self._folder, True)

    def start(self, pid: int) -> None:
        output = self._folder / f"{pid}-{time.monotonic_ns()}.json"
        pace = self._paces.setdefault(pid, Pace(self.budget_share))
        chunk_s, rate_per_s = pace.next_chunk()
        command = [
            *self.py_spy, "record", "--native", "--idle", "--threads", "--format", "speedscope",
            "--rate", str(rate_per_s), "--duration", str(chunk_s),
            "--pid", str(pid), "--output", str(output),
        ]  # fmt: skip
        env = {**os.environ, "RUST_BACKTRACE": "0"}
        child = subprocess.Popen(
            command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env
        )
        self._running[pid] = Chunk(pid, child, output, read_tasks(pid), chunk_s, rate_per_s)

    def running(self, pid: int) -> bool:
        return pid in self._running

    def pids(self) -> list[int]:
        """The processes with a chunk running (or ended and not yet read)."""
        return list(self._running)

    def finished(self, pid: int) -> tuple[StackProcess | None, str | None]:
        """A finished chunk's process entry (`threads`, `sampler`, `tasks_start`; None while it
        runs), or why it failed (what py-spy said)."""
        chunk = self._running.get(pid)
        cpu_s = None if chunk is None else _reaped_cpu_s(chunk.process)
        if chunk is None or cpu_s is None:
            return None, None
        del self._running[pid]
        err = chunk.process.communicate()[1].decode(errors="replace")
        pace = self._paces[pid]
        pace.record(chunk.chunk_s, chunk.rate_per_s, cpu_s)
        try:
            if chunk.process.returncode != 0:
                return None, err or f"py-spy record exited with status {chunk.process.returncode}"
            profile = msgspec.json.decode(chunk.output.read_bytes(), type=_Speedscope)
            entry = StackProcess(
                pid=pid,
                threads=threads_of(profile),
                sampler=SamplerPace(
                    chunk_s=chunk.chunk_s,
                    rate_per_s=chunk.rate_per_s,
                    cpu_s=round(cpu_s, 4),
                    budget_share=self.budget_share,
                ),
            )
            if chunk.tasks_start is not None:
                entry.tasks_start = list(chunk.tasks_start)
            return entry, None
        except (OSError, ValueError, KeyError, TypeError) as error:
            return None, f"py-spy record wrote no profile ({error})"
        finally:
            chunk.output.unlink(missing_ok=True)

    def stop(self) -> None:
        for chunk in self._running.values():
            chunk.process.kill()
            chunk.process.communicate()
            chunk.output.unlink(missing_ok=True)
        self._running.clear()


def _reaped_cpu_s(child: subprocess.Popen[bytes]) -> float | None:
    """The CPU seconds (user and system) of a child that has ended, reaped here so that its
    rusage is ours to read; None while it runs."""
    if child.returncode is not None:
        return 0.0  # reaped elsewhere (a kill): its CPU is not known
    try:
        pid, status, usage = os.wait4(child.pid, os.WNOHANG)
    except ChildProcessError:
        child.poll()
        return 0.0
    if pid == 0:
        return None
    child.returncode = os.waitstatus_to_exitcode(status)
    return usage.ru_utime + usage.ru_stime


def threads_of(profile: _Speedscope) -> list[StackThread]:
    """Each sample of each thread of a speedscope profile, as a dump's thread entries."""
    frames = profile.shared.frames
    threads: list[StackThread] = []
    for thread in profile.profiles:
        match = _THREAD.search(thread.name)
        tid = int(match.group(1), 16 if "0x" in thread.name else 10) if match else None
        name = match.group(2) if match else None
        for sample in thread.samples:
            stack = [frames[index] for index in reversed(sample)]  # innermost first
            threads.append(_sample(tid, name, stack))
    return threads


def _waits(frame: NativeFrame) -> bool:
    return bool(_C_LIBRARY.search(frame.library or "") and WAITS.search(frame.function))


def _sample(tid: int | None, name: str | None, stack: list[_Frame]) -> StackThread:
    python = [f for f in stack if f.line]
    inner = next((i for i, f in enumerate(stack) if f.line), len(stack))
    native = [
        NativeFrame(function=f.name[:NATIVE_NAME_CHARS], library=Path(f.file).name)
        for f in stack[:inner]
    ]
    entry = StackThread(
        tid=tid,
        name=name,
        active=not (native and _waits(native[0])),
        frames=[StackFrame(function=f.name, file=f.file, line=f.line) for f in python],
    )
    if native:
        entry.native = native
    return entry
