"""The ranks of a job attached to from outside, read again while it is watched: the `ranks`
record of samples/ranks.jsonl.

`attach` finds a job's ranks once as it starts (`tree.find_job`); a launcher that restarts
them (`torchrun --max-restarts`, an elastic job) starts new pids under the same numbers, and an
elastic scale-up adds numbers. Every few seconds `RankWatch.sample` reads the launcher's ranks
again the way `find_job` does (its python children, each one's RANK from /proc/PID/environ;
only the pids not seen before have their environment read) and returns a record when a number
is under a new pid or is new. A rank that is gone, or not yet restarted, keeps its last pid:
the assessment says it is silent until its new pid shows. The stack sampler needs nothing from
here: it follows the launcher's tree itself, starting on a new training process and reaping
the chunk of one that ended (`collectors.stacks`).

Ranks numbered by start order (an environment unreadable) cannot be matched across a restart,
so they are not followed.
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any

import psutil  # type: ignore[import-untyped, unused-ignore]

from torchtop.collectors.tree import RankProcess, is_python, job_tree, read_rank
from torchtop.model.attach import AttachedRank, AttachTarget

INTERVAL_S = 2.0
"""How often the ranks are read again: a restarted rank is shown within a few seconds of its
start, and a read costs a process-tree walk and one environment per new pid."""


class RankWatch:
    """Each rank number's newest pid, from the launcher's tree; a record when one changes."""

    def __init__(self, target: AttachTarget) -> None:
        self.root_pid = target.root_pid
        self.launched = target.launcher is not None
        self.ranks: dict[int, AttachedRank] = {
            r.rank: r for r in target.ranks if r.rank is not None
        }
        self.followed = target.numbered_by == "environment"
        self._read: dict[int, RankProcess | None] = {r.pid: None for r in target.ranks}
        """Pids already looked at (what their environment said: None for no RANK)."""

    def sample(self) -> dict[str, Any] | None:
        """A `ranks` record when a rank number is under a new pid or is new, else None."""
        if not self.followed:
            return None
        changed = False
        for found in self._new_ranks():
            known = self.ranks.get(found.rank) if found.rank is not None else None
            if found.rank is None or (known is not None and known.pid == found.pid):
                continue
            self.ranks[found.rank] = AttachedRank(**dataclasses.asdict(found))
            changed = True
        if not changed:
            return None
        listed = [self.ranks[number] for number in sorted(self.ranks)]
        return {"kind": "ranks", "t": time.time(), "ranks": listed}

    def _new_ranks(self) -> list[RankProcess]:
        """The training processes under the root not looked at before, read once each."""
        fresh = []
        for process in self._candidates():
            if process.pid in self._read:
                continue
            try:
                found = read_rank(process)
            except psutil.NoSuchProcess:
                found = None
            self._read[process.pid] = found
            if found is not None:
                fresh.append(found)
        return fresh

    def _candidates(self) -> list[psutil.Process]:
        """A launcher's training processes; else the root's python children (`mp.spawn`'s
        ranks, `srun`'s), as `tree.find_job` finds them."""
        if self.launched:
            tree = job_tree(self.root_pid)
            return [m.process for m in tree if m.role == "main" and m.pid != self.root_pid]
        try:
            children = psutil.Process(self.root_pid).children()
        except psutil.NoSuchProcess:
            return []
        return [c for c in children if _is_python(c)]


def _is_python(process: psutil.Process) -> bool:
    try:
        return is_python(tuple(process.cmdline()))
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return False
