"""`torchtop attach PID`: the process to watch, checked, and its agent's run folder if it has one.

The assessment of a process without an agent (shares of py-spy samples) is `assess.attached`;
this module holds only what needs the live process.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import psutil

from torchtop.errors import InputError


def check_target(pid: int) -> psutil.Process:
    """The process to attach to, or one clear InputError."""
    label = f"PID {pid}"
    try:
        process = psutil.Process(pid)
        cmdline = process.cmdline()
        exe = process.exe() if cmdline else ""
    except psutil.NoSuchProcess:
        raise InputError(
            label, "no such process (`ps -ef | grep python` lists the running ones)"
        ) from None
    except psutil.AccessDenied:
        raise InputError(label, "cannot be read (permission denied)") from None
    if pid == os.getpid():
        raise InputError(label, "that is torchtop itself")
    names = [Path(part).name for part in (exe, *(cmdline[:1]))]
    if not any(name.startswith("python") for name in names):
        raise InputError(
            label,
            f"not a Python process ({' '.join(cmdline)[:60] or 'no command line'}): attach the "
            "training script's python, or start it watched: `torchtop run -- python train.py`",
        )
    return process


def agent_run_dir(process: psutil.Process) -> Path | None:
    """The run folder of a job started by `torchtop run`, if this process has an agent."""
    try:
        value = process.environ().get("TORCHTOP_RUN_DIR")
    except (psutil.AccessDenied, psutil.NoSuchProcess):
        return None
    return Path(value) if value and Path(value).is_dir() else None


def print_target(process: psutil.Process, run_dir: Path | None) -> None:
    where = f"its agent's run folder {run_dir}" if run_dir else "stack samples (no agent inside)"
    print(f"torchtop: watching PID {process.pid} through {where}", file=sys.stderr)
