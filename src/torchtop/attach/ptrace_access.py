"""Whether this process may ptrace another: said before anything stops it.

Linux allows it when the caller has CAP_SYS_PTRACE, or when the target's user and group ids
all equal the caller's and Yama's `ptrace_scope` (where the kernel has Yama) allows it: 0
anyone, 1 only a descendant of the tracer (gdb, here: never the job), 2 only CAP_SYS_PTRACE,
3 nobody. gdb is the final judge (`ptrace: Operation not permitted`, `gdb_call`); this only
turns the common cases into one line that says what to do, before the attach writes anything.
"""

from __future__ import annotations

import os
from pathlib import Path

import psutil

from torchtop.errors import InputError

CAP_SYS_PTRACE = 19
YAMA_SCOPE = Path("/proc/sys/kernel/yama/ptrace_scope")


def check_ptrace(process: psutil.Process) -> None:
    """InputError (one line naming the PID and what to do) where ptrace is plainly refused."""
    label = f"PID {process.pid}"
    scope = _yama_scope()
    if scope == 3:
        raise InputError(label, "ptrace is disabled on this machine (ptrace_scope 3): no --inject")
    if _has_cap_sys_ptrace():
        return
    if scope == 2:
        raise InputError(
            label, "only root may ptrace here (kernel.yama.ptrace_scope = 2): run as root"
        )
    try:
        uids, gids = process.uids(), process.gids()
    except psutil.Error:
        uids, gids = None, None
    me = os.getuid()
    if uids is not None and gids is not None and (set(uids) != {me} or set(gids) != {os.getgid()}):
        raise InputError(
                label, f"you may not ptrace it: it runs as uid {uids.real}, you as uid {me}; "
                "run `torchtop attach --inject` as that user, or as root"
            )  # fmt: skip
    if scope == 1:
        # gdb, the tracer, is torchtop's child, never an ancestor of the job.
        raise InputError(
            label, "you may not ptrace it (kernel.yama.ptrace_scope = 1 allows a process only "
            "its own children): run as root, or `sysctl kernel.yama.ptrace_scope=0`"
        )  # fmt: skip


def _yama_scope() -> int | None:
    try:
        return int(YAMA_SCOPE.read_text().strip())
    except (OSError, ValueError):
        return None


def _has_cap_sys_ptrace() -> bool:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("CapEff:"):
                return bool(int(line.split()[1], 16) >> CAP_SYS_PTRACE & 1)
    except (OSError, ValueError, IndexError):
        pass
    return os.geteuid() == 0
