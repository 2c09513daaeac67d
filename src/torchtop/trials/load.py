"""The machine's other load during a measured run, and whether it changed under a trial.

A trial's rounds compare only if the machine gave each run alike: a job measured while another
tenant took two cores is slower for that, not for its fix (issue 31: the same job ran 20x slower
beside busy processes). So each measured run records the cores that processes outside its job
used meanwhile: the host's busy CPU time over the run (psutil's `cpu_times`, as `top`'s `%Cpu`
line counts it) less the job's own (its process tree's user and system time, its reaped
children's included) and torchtop's own, over the run's wall time. Modest by design: one reading
at each end of the run, no sampling thread. A DataLoader worker the job already reaped before
the end counts in its parent's children times only if the parent waited for it, so a job's share
can be under-counted, never another tenant's invented beyond that.

`load_change` reads the runs of a trial in the order measured and says the first round whose
run's other load departs from the first run's by `CHANGE_CORES` or more.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass

import psutil

CHANGE_CORES = 0.5
"""Other load that moved this many cores between runs of a trial is said to have changed:
half a core is a tenth of a step on a job that fills 5 cores, a quarter on this 2-core machine."""


def _busy_s() -> float:
    times = psutil.cpu_times()
    idle = times.idle + getattr(times, "iowait", 0.0)
    return (
        float(sum(times)) - idle - getattr(times, "guest", 0.0) - getattr(times, "guest_nice", 0.0)
    )


def _tree_cpu_s(pid: int) -> float:
    """CPU seconds of `pid` and its living descendants (with the children each reaped)."""
    total = 0.0
    try:
        root = psutil.Process(pid)
        processes = [root, *root.children(recursive=True)]
    except psutil.Error:
        return total
    for process in processes:
        with contextlib.suppress(psutil.Error):
            t = process.cpu_times()
            total += t.user + t.system + t.children_user + t.children_system
    return total


@dataclass(frozen=True)
class LoadMeter:
    """The readings at the start of a run; `other_cores(job_pid)` at its end."""

    started_s: float
    busy_s: float
    own_s: float

    @classmethod
    def start(cls) -> LoadMeter:
        return cls(time.monotonic(), _busy_s(), _tree_cpu_s(os.getpid()))

    def other_cores(self, job_pid: int | None) -> float | None:
        """Cores used by processes outside the job and torchtop since `start`, on average;
        None where the run was too short to tell (under a second)."""
        wall_s = time.monotonic() - self.started_s
        if wall_s < 1.0:
            return None
        job_s = _tree_cpu_s(job_pid) if job_pid is not None else 0.0
        own_s = _tree_cpu_s(os.getpid()) - self.own_s
        # The job's own tree is among torchtop's children; its time is taken once.
        if job_pid is not None:
            own_s = max(own_s - job_s, 0.0)
        other_s = _busy_s() - self.busy_s - job_s - own_s
        return round(max(other_s, 0.0) / wall_s, 2)


def load_change(runs_cores: Sequence[tuple[int, float | None]]) -> str | None:
    """`the machine's other load rose from 0.1 to 1.9 cores during round 3: the rounds may not
    compare`, from (round, other cores) of each run in the order measured; None: steady, or
    not measured."""
    measured = [(k, cores) for k, cores in runs_cores if cores is not None]
    if len(measured) < 2:
        return None
    first = measured[0][1]
    for k, cores in measured[1:]:
        if abs(cores - first) >= CHANGE_CORES:
            moved = "rose" if cores > first else "fell"
            return (
                f"the machine's other load {moved} from {first:.1f} to {cores:.1f} cores "
                f"during round {k}: the rounds may not compare"
            )
    return None
