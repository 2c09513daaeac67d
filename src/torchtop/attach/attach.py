"""`torchtop attach PID`: the process to watch, checked; the job it belongs to (a launcher and
its ranks, or a rank and its peers: `collectors.tree.find_job`); and its agent's run folder if
it has one.

The assessment of a process without an agent (shares of py-spy samples) is `assess.attached`
(`assess.attached_ranks` for a job of several ranks); this module holds only what needs the
live process.
"""

from __future__ import annotations

import dataclasses
import os
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import psutil
from msgspec.structs import replace

from torchtop.assess.context import Context
from torchtop.assess.run import assess
from torchtop.collectors.tree import FoundJob, find_job
from torchtop.diagnosis.rules import RuleTree
from torchtop.errors import InputError
from torchtop.jobs.processes import is_alive
from torchtop.live.watch import Assessor
from torchtop.model.analysis import RankAnalysis
from torchtop.model.attach import AttachedRank, AttachTarget
from torchtop.model.report import Report
from torchtop.runs.state import RunState

RANKS_WAIT_S = 10.0
"""How long attach waits for a launcher that has started no rank yet, before watching it as a
process of its own."""


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


def find_target(process: psutil.Process) -> AttachTarget | None:
    """The job of several ranks `process` is part of (as its launcher or one of its ranks), or
    None for a process that is a job of its own (watched as it always was)."""
    found = _found(process.pid)
    deadline_s = time.monotonic() + RANKS_WAIT_S
    while found.role == "launcher" and not found.ranks and time.monotonic() < deadline_s:
        time.sleep(0.25)  # a launcher caught before its rendezvous: its ranks are coming
        found = _found(process.pid)
    if found.role == "process" or not found.ranks:
        return None
    # `collectors.tree.RankProcess` names the same fields: what was read of each rank.
    ranks = tuple(AttachedRank(**dataclasses.asdict(r)) for r in found.ranks)
    return AttachTarget(
        pid=found.pid,
        role=found.role,
        root_pid=found.root_pid,
        launcher=found.launcher,
        ranks=ranks,
        numbered_by=found.numbered_by,
    )


def _found(pid: int) -> FoundJob:
    try:
        return find_job(pid)
    except psutil.NoSuchProcess:
        raise InputError(f"PID {pid}", "ended while torchtop looked at it") from None


def job_run_dir(process: psutil.Process, target: AttachTarget | None) -> Path | None:
    """The agent's run folder of a job started by `torchtop run`: in the environment of the
    process, or of its launcher or any of its ranks."""
    pids = [process.pid]
    if target is not None:
        pids += [target.root_pid, *(r.pid for r in target.ranks)]
    for pid in dict.fromkeys(pids):
        try:
            found = agent_run_dir(psutil.Process(pid))
        except psutil.NoSuchProcess:
            continue
        if found is not None:
            return found
    return None


def agent_run_dir(process: psutil.Process) -> Path | None:
    """The run folder of a job started by `torchtop run`, if this process has an agent."""
    try:
        value = process.environ().get("TORCHTOP_RUN_DIR")
    except (psutil.AccessDenied, psutil.NoSuchProcess):
        return None
    return Path(value) if value and Path(value).is_dir() else None


def print_target(
    process: psutil.Process, run_dir: Path | None, target: AttachTarget | None = None
) -> None:
    where = f"its agent's run folder {run_dir}" if run_dir else "stack samples (no agent inside)"
    if target is not None:
        print(f"torchtop: {target.announcement()}", file=sys.stderr)
        return
    print(f"torchtop: watching PID {process.pid} through {where}", file=sys.stderr)


def through(target: AttachTarget | None, run_dir: Path | None) -> AttachTarget | None:
    """`target`, saying how it is watched: its agent's run folder, or stack samples."""
    if target is None or run_dir is None:
        return target
    return replace(target, watched=f"through its agent's run folder {run_dir}")


@dataclass(frozen=True)
class Resolved:
    """What attach watches: the job found around the pid (None: a process of its own), its
    agent's run folder if it has one, and the processes that say whether it still runs."""

    target: AttachTarget | None
    agent_dir: Path | None
    root: psutil.Process
    """Whose tree the collectors sample: the launcher (or the ranks' parent), else the pid."""
    ranks: tuple[psutil.Process, ...] = ()

    def alive(self) -> bool:
        """Its launcher runs, or (ranks with no launcher above them) any of its ranks: a rank
        that ends while its peers go on is shown as ended, not the end of watching."""
        if self.target is None or self.target.launcher is not None:
            return is_alive(self.root)
        return any(is_alive(rank) for rank in self.ranks)


def resolve(process: psutil.Process) -> Resolved:
    """The job `process` belongs to, said in one line on stderr."""
    target = find_target(process)
    agent_dir = job_run_dir(process, target)
    target = through(target, agent_dir)
    print_target(process, agent_dir, target)
    if target is None:
        return Resolved(None, agent_dir, process)
    try:
        root = process if target.root_pid == process.pid else psutil.Process(target.root_pid)
    except psutil.NoSuchProcess:
        raise InputError(f"PID {target.root_pid}", "the job's launcher ended") from None
    return Resolved(target, agent_dir, root, tuple(_still_running(target)))


def _still_running(target: AttachTarget) -> list[psutil.Process]:
    ranks = []
    for rank in target.ranks:
        try:
            ranks.append(psutil.Process(rank.pid))
        except psutil.NoSuchProcess:
            continue
    return ranks


def naming(target: AttachTarget | None, context: Context) -> Assessor | None:
    """For a job with an agent: its run's assessment, naming what was attached to (None, the
    monitor's own, where attach found a job of one process)."""
    if target is None:
        return None

    pids = {rank.rank: rank.pid for rank in target.ranks}

    def assessed(
        state: RunState, windows: Mapping[int, RankAnalysis], tree: RuleTree, kind: str
    ) -> Report:
        report = assess(state, windows, tree, kind, context=context)
        # Each rank's pid, as attach found it, matched by the rank number its agent reports;
        # a rank restarted since has its newest process's already (`assess.restarts`).
        ranks = tuple(
            r if r.pid is not None else replace(r, pid=pids.get(r.analysis.rank))
            for r in report.ranks
        )
        return replace(report, ranks=ranks, attached=target)

    return assessed
