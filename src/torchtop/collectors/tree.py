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
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from pathlib import PurePath

import psutil  # type: ignore[import-untyped, unused-ignore]

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
