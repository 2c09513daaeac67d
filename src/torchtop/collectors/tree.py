"""The job's process tree (the root pid and all its descendants), each process with its role.

Roles: `main` for training processes, `worker` for their DataLoader workers, `launcher` for a
`torchrun` (or `python -m torch.distributed.run`) that only starts training processes, and
`other` for everything else (a shell wrapper, the multiprocessing resource tracker or forkserver,
torch.compile's worker pool). Roles are worked out top-down from the command lines alone, so
the same rules apply to a job torchtop started and to one it attached to:

- a python process with no training process above it is `main`, unless it is a launcher;
- the python children of a launcher are `main`;
- a child of a training process is a `worker` when it is a multiprocessing child: forked (same
  command line as its parent, which is how DataLoader workers start under the default `fork`
  on Linux) or started by `multiprocessing.spawn` or the forkserver.

`find_job` answers `attach`'s question, which job of ranks a pid belongs to: a launcher's python
children; a launcher found above a rank; else processes beside it, or under it, that share
rendezvous variables (`srun`, `mp.spawn`) their parent did not start with. Each rank is numbered
from the RANK in its environment (`/proc/PID/environ`, what it was started with), else all by
start order.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from pathlib import PurePath

import psutil  # type: ignore[import-untyped, unused-ignore]

from torchtop.runs.node import process_cpus

_PYTHON_EXECUTABLE = re.compile(r"^python[\d.]*$")
_LAUNCHER_MARKERS = ("torch.distributed.run", "torch.distributed.launch")
_EXEC_GRACE_S = 0.02
_HELPER_MARKERS = ("multiprocessing.resource_tracker", "multiprocessing.semaphore_tracker")


@dataclass(frozen=True)
class JobProcess:
    """One process of the job's tree, as seen now."""

    process: psutil.Process
    pid: int
    ppid: int
    role: str


@dataclass(frozen=True)
class _Seen:
    process: psutil.Process
    ppid: int
    cmdline: tuple[str, ...]


def job_tree(root_pid: int) -> list[JobProcess]:
    """The root and its descendants, parents before children; vanished processes are skipped."""
    try:
        root = psutil.Process(root_pid)
        processes = [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return []
    seen = [s for s in (_look(p) for p in processes) if s is not None]
    return _assign_roles(seen, root_pid)


def job_pids(root_pid: int) -> list[int]:
    """The pids of the job's tree (for NVML's per-process readings)."""
    return [member.pid for member in job_tree(root_pid)]


def is_python(cmdline: tuple[str, ...]) -> bool:
    return bool(cmdline) and _PYTHON_EXECUTABLE.match(PurePath(cmdline[0]).name) is not None


def is_launcher(cmdline: tuple[str, ...]) -> bool:
    if any(PurePath(arg).name == "torchrun" for arg in cmdline[:2]):
        return True
    return any(marker in arg for arg in cmdline[:3] for marker in _LAUNCHER_MARKERS)


def _look(process: psutil.Process) -> _Seen | None:
    try:
        return _Seen(process, process.ppid(), _cmdline(process))
    except psutil.NoSuchProcess:
        return None


def _cmdline(process: psutil.Process) -> tuple[str, ...]:
    try:
        cmdline = tuple(process.cmdline())
        if not cmdline:
            # A process caught inside exec() has no arguments for a moment (multiprocessing's
            # spawn does not wait for exec to finish): look once more before judging it.
            time.sleep(_EXEC_GRACE_S)
            cmdline = tuple(process.cmdline())
    except psutil.AccessDenied:
        return ()
    return cmdline


def _assign_roles(seen: list[_Seen], root_pid: int) -> list[JobProcess]:
    # context says what a process's children are: "top" (no training process above yet),
    # "launcher", "main", "forkserver" (its children are workers) or "inner".
    context: dict[int, str] = {}
    cmdlines = {s.process.pid: s.cmdline for s in seen}
    parents = {s.process.pid: s.ppid for s in seen}
    members: list[JobProcess] = []
    for s in sorted(seen, key=lambda item: _depth(item.process.pid, parents, root_pid)):
        pid = s.process.pid
        parent_context = "top" if pid == root_pid else context.get(s.ppid, "inner")
        role, context[pid] = _role(s.cmdline, parent_context, cmdlines.get(s.ppid, ()))
        members.append(JobProcess(s.process, pid, s.ppid, role))
    return members


def _role(
    cmdline: tuple[str, ...], parent_context: str, parent_cmdline: tuple[str, ...]
) -> tuple[str, str]:
    """(role, context for its children) of a process whose parent has `parent_context`."""
    if parent_context == "top":
        if is_launcher(cmdline):
            return "launcher", "launcher"
        return ("main", "main") if is_python(cmdline) else ("other", "top")
    if parent_context == "launcher":
        return ("main", "main") if is_python(cmdline) else ("other", "top")
    if parent_context == "main":
        joined = " ".join(cmdline)
        if "multiprocessing.forkserver" in joined:
            return "other", "forkserver"
        if any(marker in joined for marker in _HELPER_MARKERS):
            return "other", "inner"
        if cmdline == parent_cmdline or "multiprocessing.spawn" in joined:
            return "worker", "inner"
        return "other", "inner"
    if parent_context == "forkserver":
        return "worker", "inner"
    return "other", "inner"


def _depth(pid: int, parents: dict[int, int], root_pid: int) -> int:
    depth = 0
    while pid != root_pid and pid in parents and depth < 64:
        pid, depth = parents[pid], depth + 1
    return depth


# The job a pid belongs to, for `attach`: its launcher, its ranks and their numbers.

RANK_VARIABLES = ("RANK", "LOCAL_RANK", "WORLD_SIZE")
_JOB_VARIABLES = ("WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")
_LAUNCHER_LEVELS = 4  # a DataLoader worker's launcher is two levels up; a shell wrapper adds one


@dataclass(frozen=True)
class RankProcess:
    """One training process of a job, numbered from its environment where it can be read."""

    pid: int
    rank: int | None
    local_rank: int | None = None
    world_size: int | None = None
    omp_num_threads: str | None = None
    """`OMP_NUM_THREADS` it was started with (torchrun sets 1 for several ranks)."""
    cpus: int | None = None
    """The CPUs its threads may use (`runs.node.process_cpus`)."""


@dataclass(frozen=True)
class FoundJob:
    """What a pid turned out to be: `launcher` (its python children are the ranks), `parent`
    (a process whose children are ranks of one job: `mp.spawn`'s script), `rank` (of a launcher
    or of siblings that share one job) or `process` (a job of one process)."""

    pid: int
    role: str
    root_pid: int
    """Whose tree holds the whole job: the launcher, the ranks' shared parent, or the pid."""
    ranks: tuple[RankProcess, ...] = ()
    launcher: str | None = None
    """`torchrun`, `torch.distributed.run`, ... for a job under a launcher."""
    numbered_by: str = "environment"
    """`environment` (each rank's RANK) or `start order` (a rank without one, or unreadable)."""


def find_job(pid: int) -> FoundJob:
    """The job `pid` is part of, seen now; a process that is no part of a job of several is a
    `process`. Raises psutil.NoSuchProcess when `pid` is gone."""
    process = psutil.Process(pid)
    own = _cmdline(process)
    if is_launcher(own):
        return _launched(pid, pid, "launcher", own)
    for ancestor in _ancestors(process):
        cmdline = _cmdline(ancestor)
        if is_launcher(cmdline):
            return _launched(pid, ancestor.pid, "rank", cmdline)
    return _siblings(process) or _spawned(process) or FoundJob(pid, "process", pid)


def launcher_name(cmdline: tuple[str, ...]) -> str:
    if any(PurePath(arg).name == "torchrun" for arg in cmdline[:2]):
        return "torchrun"
    return next((m for m in _LAUNCHER_MARKERS if any(m in arg for arg in cmdline[:3])), "launcher")


def read_rank(process: psutil.Process) -> RankProcess | None:
    """RANK, LOCAL_RANK and WORLD_SIZE from its environment; None when it cannot be read."""
    environ = _environ(process)
    if environ is None:
        return None
    rank, local_rank, world_size = (_number(environ.get(name)) for name in RANK_VARIABLES)
    cpus = process_cpus(process.pid)
    return RankProcess(
        process.pid,
        rank,
        local_rank,
        world_size,
        omp_num_threads=environ.get("OMP_NUM_THREADS"),
        cpus=len(cpus) if cpus else None,
    )


def _launched(pid: int, launcher_pid: int, role: str, cmdline: tuple[str, ...]) -> FoundJob:
    mains = [m.process for m in job_tree(launcher_pid) if m.role == "main"]
    ranks, numbered_by = _numbered(mains)
    return FoundJob(pid, role, launcher_pid, ranks, launcher_name(cmdline), numbered_by)


def _siblings(process: psutil.Process) -> FoundJob | None:
    """The processes beside `process` (same parent) that share its job's rendezvous (`mp.spawn`,
    SLURM's `srun`): None unless there are several."""
    try:
        parent = process.parent()
        children = parent.children() if parent is not None else []
    except psutil.NoSuchProcess:
        return None
    shared = _rendezvous(process, parent)
    peers = [c for c in children if shared and _shares(c, shared)]
    if len(peers) < 2 or parent is None:
        return None
    ranks, numbered_by = _numbered(peers)
    return FoundJob(process.pid, "rank", parent.pid, ranks, None, numbered_by)


def _spawned(process: psutil.Process) -> FoundJob | None:
    """`process` as the parent of several ranks that share one rendezvous (`mp.spawn`'s
    script): None unless there are several."""
    try:
        children = process.children()
    except psutil.NoSuchProcess:
        return None
    for child in children:
        shared = _rendezvous(child, process)
        peers = [c for c in children if shared and _shares(c, shared)]
        if len(peers) >= 2:
            ranks, numbered_by = _numbered(peers)
            return FoundJob(process.pid, "parent", process.pid, ranks, None, numbered_by)
    return None


def _rendezvous(child: psutil.Process, parent: psutil.Process | None) -> dict[str, str]:
    """The rendezvous variables `child` has and its parent did not start with: its ranks' own
    (set for them, by `srun` or by a script before `mp.spawn`). What the parent had too is
    inherited, as a DataLoader worker inherits its rank's, and makes no job of its own."""
    environ = _environ(child) or {}
    inherited = (_environ(parent) if parent is not None else None) or {}
    return {
        name: environ[name]
        for name in _JOB_VARIABLES
        if name in environ and inherited.get(name) != environ[name]
    }


def _shares(process: psutil.Process, shared: dict[str, str]) -> bool:
    environ, cmdline = _environ(process), _cmdline(process)
    # multiprocessing's resource tracker inherits the variables too, and is no rank.
    helper = any(marker in arg for arg in cmdline for marker in _HELPER_MARKERS)
    if environ is None or not is_python(cmdline) or helper:
        return False
    return all(environ.get(k) == v for k, v in shared.items())


def _numbered(processes: list[psutil.Process]) -> tuple[tuple[RankProcess, ...], str]:
    """Ranks by their RANK; where one cannot be read, all numbered by start order instead."""
    read = [read_rank(p) for p in processes]
    known = [r for r in read if r is not None and r.rank is not None]
    if len(known) == len(processes) and len({r.rank for r in known}) == len(known):
        return tuple(sorted(known, key=lambda r: r.rank or 0)), "environment"
    started = sorted(processes, key=_started_at)
    return tuple(RankProcess(p.pid, index) for index, p in enumerate(started)), "start order"


def _ancestors(process: psutil.Process) -> list[psutil.Process]:
    try:
        return process.parents()[:_LAUNCHER_LEVELS]
    except psutil.NoSuchProcess:
        return []


def _environ(process: psutil.Process) -> dict[str, str] | None:
    try:
        return dict(process.environ())
    except (psutil.AccessDenied, psutil.NoSuchProcess, psutil.ZombieProcess, OSError):
        return None


def _started_at(process: psutil.Process) -> tuple[float, int]:
    try:
        return process.create_time(), process.pid
    except psutil.NoSuchProcess:
        return float("inf"), process.pid


def _number(value: str | None) -> int | None:
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None
