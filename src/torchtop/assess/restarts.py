"""A rank its launcher restarted, under `run`: one row, not one per process.

`torchrun --max-restarts` starts every rank again under new pids; each new process's agent
writes its own journal, so the run state holds two processes of each rank number. The ranks
table would list `rank 1 silent since ...` beside `rank 1`. Here each node's rank number keeps
one row, its newest process's (by when its agent said hello), naming the earlier processes
as its `restarts` with what they recorded (their timed steps); the job's figures still pool
every process's steps.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise

from msgspec.structs import replace

from torchtop.model.report import RankReport, Restart
from torchtop.runs.state import ProcessState


def fold_restarts(
    reports: Sequence[RankReport], processes: Sequence[ProcessState]
) -> tuple[RankReport, ...]:
    """`reports` (one per process, in the order of `processes`), one per node and rank."""
    groups: dict[tuple[str | None, str], list[tuple[RankReport, ProcessState]]] = {}
    for report, process in zip(reports, processes, strict=True):
        key = (report.node, f"rank {process.rank}" if process.rank is not None else process.label)
        groups.setdefault(key, []).append((report, process))
    return tuple(_folded(group) for group in groups.values())


def _folded(group: list[tuple[RankReport, ProcessState]]) -> RankReport:
    if len(group) == 1:
        return group[0][0]
    ordered = sorted(group, key=lambda item: _started_t(item[1]))
    newest, process = ordered[-1]
    restarts = tuple(
        Restart(earlier.pid, _started_t(later), steps_count=earlier.steps_seen)
        for (_, earlier), (_, later) in pairwise(ordered)
    )
    return replace(newest, pid=process.pid, restarts=restarts)


def newest_of_one_rank(processes: Sequence[ProcessState]) -> ProcessState | None:
    """The newest process where all of `processes` are one rank restarted (or one process);
    None where they are several ranks."""
    if len({(p.node, p.rank) for p in processes}) != 1:
        return None
    return max(processes, key=_started_t)


def _started_t(process: ProcessState) -> float:
    """When its agent said hello (else its first kept step): the newest started last."""
    if process.hello is not None:
        return process.hello.t
    return process.steps[0].t if process.steps else 0.0
