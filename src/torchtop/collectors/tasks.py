"""Every OS thread of a process, by name and CPU time, from /proc/PID/task (Linux).

py-spy shows only threads that run Python. The evidence for what libtorch does beside them is
in the others: gloo's `pt_gloo_runloop` and `gloo_tcp_loop`, NCCL's, the autograd engine's
`pt_autograd_N`, and GNU OpenMP's pool, whose threads keep the name of the thread that made
them. Reading /proc needs no ptrace and does not pause the process, so it is taken with every
dump; CPU time is cumulative, and two readings make a rate.
"""

from __future__ import annotations

import os
from pathlib import Path

from torchtop.runs.records import TaskTime

_TICKS_PER_S = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
# utime and stime, stat's 14th and 15th fields, as indexes into the fields after the name
# (the 3rd field, the state, is index 0).
_UTIME_INDEX = 11
_STIME_INDEX = 12


def read_tasks(pid: int, proc: Path = Path("/proc")) -> list[TaskTime] | None:
    """The threads of `pid`, tid order; None where /proc cannot be read (not Linux, gone)."""
    try:
        tids = sorted(int(name) for name in os.listdir(proc / str(pid) / "task"))
    except (OSError, ValueError):
        return None
    tasks = []
    for tid in tids:
        task = _read_task(proc / str(pid) / "task" / str(tid), tid)
        if task is not None:
            tasks.append(task)
    return tasks


def _read_task(folder: Path, tid: int) -> TaskTime | None:
    try:
        stat = (folder / "stat").read_text()
        name = (folder / "comm").read_text().rstrip("\n")
    except OSError:
        return None  # a thread that ended between the listing and the read
    # The name in stat may hold spaces and parentheses: the fields start after the last ")".
    fields = stat[stat.rfind(")") + 2 :].split()
    try:
        ticks = int(fields[_UTIME_INDEX]) + int(fields[_STIME_INDEX])
    except (IndexError, ValueError):
        return None
    return TaskTime(tid=tid, name=name, cpu_s=ticks / _TICKS_PER_S)
