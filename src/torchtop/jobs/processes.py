"""A job's processes: its tree, whether one still runs, and killing what outlived a stop.

A signal to the job's process group does not reach everything it started: `torchrun` starts
each worker in a session of its own, and a worker whose launcher died is re-parented where the
job's tree no longer shows it. So the tree is listed before the first signal, and what of it
survives the graceful stop is killed, with its own process group when it leads one.
"""

from __future__ import annotations

import contextlib
import os
import signal

import psutil

SURVIVOR_WAIT_S = 5.0


def job_tree(pid: int) -> list[psutil.Process]:
    """The process `pid` and all its descendants, now; empty when it is gone."""
    try:
        root = psutil.Process(pid)
        return [root, *root.children(recursive=True)]
    except psutil.Error:
        return []


def is_alive(target: int | psutil.Process) -> bool:
    """Whether the process runs: a zombie (ended, not yet reaped) does not; a pid that was
    reused since `target` was taken is another process, and does not either."""
    try:
        process = target if isinstance(target, psutil.Process) else psutil.Process(target)
        return process.is_running() and process.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def signal_group(pid: int, sig: signal.Signals) -> None:
    """`sig` to the process group that `pid` leads, if it still exists."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)


def kill_survivors(tree: list[psutil.Process]) -> None:
    """SIGKILL what of `tree` still runs (and the groups it leads), then wait for it to go."""
    alive = [p for p in tree if is_alive(p)]
    if not alive:
        return
    groups = {_group(p) for p in alive} - {None, os.getpgrp()}
    leaders = {p.pid for p in tree}
    for group in groups:
        if group is not None and group in leaders:
            signal_group(group, signal.SIGKILL)
    for process in alive:
        with contextlib.suppress(psutil.Error):
            process.kill()
    psutil.wait_procs(alive, timeout=SURVIVOR_WAIT_S)


def _group(process: psutil.Process) -> int | None:
    try:
        return os.getpgid(process.pid)
    except (ProcessLookupError, PermissionError):
        return None
