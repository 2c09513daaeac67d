"""Who else uses the machine's CPUs: the processes outside the job, and the job's run-queue wait.

Every process's CPU time is read at each host sample (psutil's `cpu_times`, one read of
/proc/PID/stat) and differenced against the previous sample's, so a figure is the share of a
core it used since then, whatever it did before. Not counted as another tenant: the job's own
tree (its ranks and DataLoader workers), this torchtop process and everything it started (the
job under `run`, its py-spy samplers), any other torchtop process and the py-spy it runs, and
processes of the same run started elsewhere (another node's launcher on this machine: their
`TORCHTOP_RUN_DIR` lies under the same run folder). A process is classified once, when it first
uses enough CPU to be listed, so the command lines and environments of idle processes are never
read.

The job's run-queue wait is the second field of `/proc/PID/task/TID/schedstat`: nanoseconds a
thread spent ready to run with no core free for it (the kernel's `sched_info.run_delay`),
differenced per thread between samples, so a thread that started or ended in between counts
from the sample it was first seen in.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path, PurePath

import psutil  # type: ignore[import-untyped, unused-ignore]

from torchtop.runs.records import HostProcess

LISTED_PCT = 5.0
"""A process outside the job is listed by name from this share of one core (%)."""
MAX_LISTED = 8
COMMAND_CHARS = 80
RUN_DIR_ENV = "TORCHTOP_RUN_DIR"
_ATTRS = ["ppid", "name", "cpu_times", "create_time"]
_PROC = Path("/proc")
_TICKS_PER_S = float(os.sysconf("SC_CLK_TCK")) if hasattr(os, "sysconf") else 100.0

ProcessKey = tuple[int, float]
"""A process as (pid, start time, in /proc's clock ticks or psutil's seconds): a pid reused by
a new process is a new key."""


@dataclass
class OthersState:
    """CPU seconds of every process at the previous sample, and which are torchtop's own."""

    cpu_s: dict[ProcessKey, float] = field(default_factory=dict)
    own: dict[ProcessKey, bool] = field(default_factory=dict)


@dataclass(frozen=True)
class _Seen:
    key: ProcessKey
    ppid: int
    name: str
    cpu_s: float


def sample_others(
    job: set[int], run_root: str | None, previous: OthersState | None, elapsed_s: float | None
) -> tuple[float | None, list[HostProcess], OthersState]:
    """CPU of the processes outside `job` and torchtop's own (% of one core, summed), the
    busiest of them, and the state the next sample differences against."""
    seen = _every_process()
    state = OthersState(cpu_s={s.key: s.cpu_s for s in seen})
    own_tree = _descendants(os.getpid(), seen) | {os.getpid()}
    if previous is None or elapsed_s is None or elapsed_s <= 0:
        return None, [], state
    state.own = {k: v for k, v in previous.own.items() if k in state.cpu_s}
    parents = {s.key[0]: s.ppid for s in seen}
    total_pct, listed = 0.0, []
    for s in seen:
        before = previous.cpu_s.get(s.key)
        if s.key[0] in job or s.key[0] in own_tree or before is None:
            continue
        pct = max(0.0, 100.0 * (s.cpu_s - before) / elapsed_s)
        if pct >= LISTED_PCT and _is_own(s, parents, run_root, state.own):
            continue
        total_pct += pct
        if pct >= LISTED_PCT:
            listed.append(_row(s, pct))
    listed.sort(key=lambda row: -(row.cpu_pct or 0.0))
    return round(total_pct, 1), listed[:MAX_LISTED], state


def _every_process() -> list[_Seen]:
    """Every process's parent, name and CPU seconds: from /proc/PID/stat where there is one
    (one read each, about 2 ms for a hundred processes; psutil's attributes take ~4x that),
    else through psutil."""
    if not _PROC.is_dir():
        return _every_process_psutil()
    seen = []
    for entry in os.scandir(_PROC):
        if entry.name.isdigit():
            found = _read_stat(int(entry.name))
            if found is not None:
                seen.append(found)
    return seen


def _read_stat(pid: int) -> _Seen | None:
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as stat:
            text = stat.read()
        close = text.rindex(")")
        name = text[text.index("(") + 1 : close]
        fields = text[close + 2 :].split()
        # proc(5): fields 4 (ppid), 14-15 (utime, stime), 22 (starttime), counted from 1.
        ticks = int(fields[11]) + int(fields[12])
        return _Seen((pid, float(fields[19])), int(fields[1]), name, ticks / _TICKS_PER_S)
    except (OSError, ValueError, IndexError):
        return None  # it ended between the listing and the read


def _every_process_psutil() -> list[_Seen]:
    seen = []
    for process in psutil.process_iter(_ATTRS):
        info = process.info
        times = info.get("cpu_times")
        if times is None or info.get("create_time") is None:
            continue  # gone, or not ours to read
        key = (int(process.pid), float(info["create_time"]))
        cpu_s = float(times.user + times.system)
        seen.append(_Seen(key, int(info.get("ppid") or 0), str(info.get("name") or ""), cpu_s))
    return seen


def _descendants(pid: int, seen: list[_Seen]) -> set[int]:
    children: dict[int, list[int]] = {}
    for s in seen:
        children.setdefault(s.ppid, []).append(s.key[0])
    found: set[int] = set()
    pending = [pid]
    while pending:
        for child in children.get(pending.pop(), []):
            if child not in found:
                found.add(child)
                pending.append(child)
    return found


def _is_own(
    s: _Seen, parents: dict[int, int], run_root: str | None, own: dict[ProcessKey, bool]
) -> bool:
    """Whether a busy process is torchtop's own: torchtop itself, a py-spy that torchtop runs,
    or a process of the same run (`run_root`); worked out once per process."""
    if s.key not in own:
        own[s.key] = (
            _torchtop_process(s.key[0])
            or (s.name.startswith("py-spy") and _torchtop_process(parents.get(s.key[0], 0)))
            or _same_run(s.key[0], run_root)
        )
    return own[s.key]


def _torchtop_process(pid: int) -> bool:
    return is_torchtop_command(_cmdline(pid))


def is_torchtop_command(cmdline: list[str]) -> bool:
    """`torchtop ...`, `python -m torchtop ...` or `python .../bin/torchtop ...`; not a job
    that runs one of its modules (`python -m torchtop.demo.train`)."""
    if not cmdline:
        return False
    if PurePath(cmdline[0]).name == "torchtop":
        return True
    return cmdline[1:3] == ["-m", "torchtop"] or (
        len(cmdline) > 1 and PurePath(cmdline[1]).name == "torchtop"
    )


def _same_run(pid: int, run_root: str | None) -> bool:
    if run_root is None:
        return False
    try:
        run_dir = psutil.Process(pid).environ().get(RUN_DIR_ENV)
    except (psutil.Error, OSError):
        return False
    return run_dir is not None and (run_dir + os.sep).startswith(run_root.rstrip(os.sep) + os.sep)


def _cmdline(pid: int) -> list[str]:
    try:
        return list(psutil.Process(pid).cmdline())
    except (psutil.Error, OSError):
        return []


def _row(s: _Seen, pct: float) -> HostProcess:
    command = " ".join(_cmdline(s.key[0])) or s.name
    if len(command) > COMMAND_CHARS:
        command = command[: COMMAND_CHARS - 3] + "..."
    return HostProcess(
        pid=s.key[0], ppid=s.ppid, name=s.name, cpu_pct=round(pct, 1), command=command
    )


def thread_waits_ns(pid: int) -> dict[int, int] | None:
    """Each thread's run-queue wait so far, ns (schedstat's 2nd field); None where the process
    or the kernel does not say (no schedstats)."""
    waits: dict[int, int] = {}
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
    except OSError:
        return None
    for task in tasks:
        try:
            fields = (task / "schedstat").read_text().split()
            waits[int(task.name)] = int(fields[1])
        except (OSError, ValueError, IndexError):
            continue  # the thread ended between the listing and the read
    return waits or None


def wait_pct(
    old: dict[int, int] | None, new: dict[int, int] | None, elapsed_s: float | None
) -> float | None:
    """Run-queue wait between two readings of one process, % of one core: the threads seen in
    both, summed."""
    if old is None or new is None or elapsed_s is None or elapsed_s <= 0:
        return None
    waited_ns = sum(max(0, wait - old[tid]) for tid, wait in new.items() if tid in old)
    return round(100.0 * waited_ns / 1e9 / elapsed_s, 1)
