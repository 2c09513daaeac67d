"""Stragglers by recurrence and dead or silent ranks: pure judgement over the ranks' records.

In synchronous data parallelism every rank's step wall is about the same (the fast ranks wait in
the all-reduce), so a straggler shows in what it does NOT wait: the agent times `backward()`,
which under DDP returns only once every rank's gradients are reduced. In each step the rank
with the least wait is the one the others waited on (the culprit); a straggler is the culprit
in most of the newest steps all ranks share (`RankPolicy.culprit_share`), not in one outlier.
Ranks that do not synchronise (no backward time) are compared by their plain step walls.

A rank's end comes from its `bye` (exit status or signal); without one, it is silent once a
peer went on for `silent_after_s` past its last record, its process left the host samples, or
the run ended. Each judgement is a function of the records alone, so tests plant series.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from itertools import islice

from torchtop.diagnosis.schema import RankPolicy
from torchtop.model.report import RankStanding
from torchtop.runs.records import Bye, HostSample
from torchtop.runs.state import ProcessState, StepRecord

HOST_SAMPLES_READ = 10
"""The newest host samples searched for a rank's process (it must have been seen there once)."""


def standings(
    processes: Sequence[ProcessState],
    policy: RankPolicy,
    host: Sequence[HostSample] = (),
    run_ended: bool = False,
) -> dict[int, RankStanding]:
    """Each process's standing, by pid (only for a job of more than one rank)."""
    if len(processes) < 2:
        return {}
    slow = stragglers({p.pid: list(p.steps) for p in processes}, policy)
    newest_t = max((p.last_t for p in processes if p.last_t is not None), default=None)
    result = {}
    for process in processes:
        found = slow.get(process.pid, RankStanding())
        ending = ended(process, newest_t, host, policy, run_ended)
        result[process.pid] = RankStanding(
            straggler=found.straggler,
            slower_by=found.slower_by,
            culprit_share=found.culprit_share,
            since_step=found.since_step,
            since_t=found.since_t,
            ended=ending,
        )
    return result


def stragglers(
    series: Mapping[int, Sequence[StepRecord]], policy: RankPolicy
) -> dict[int, RankStanding]:
    """The straggler among `series` (key -> its steps), if one recurs; every key otherwise
    gets its culprit share and `slower_by` where the steps allow."""
    by_number = {key: {s.step: s for s in steps} for key, steps in series.items()}
    shared = sorted(set.intersection(*(set(steps) for steps in by_number.values())))
    keys = list(series)
    if len(keys) < 2 or len(shared) < policy.min_steps:
        return {}
    rows = [[by_number[k][n] for k in keys] for n in shared]
    synchronised = all(s.backward_s is not None for row in rows for s in row)
    culprits = [_culprit(row, synchronised) for row in rows]
    window = slice(-policy.window_steps, None)
    judged = culprits[window]
    result = {}
    for index, key in enumerate(keys):
        share = judged.count(index) / len(judged)
        slower_by = _slower_by(rows[window], index, synchronised)
        result[key] = RankStanding(culprit_share=round(share, 4), slower_by=slower_by)
    top = max(range(len(keys)), key=judged.count)
    standing = result[keys[top]]
    recurs = standing.culprit_share is not None and standing.culprit_share >= policy.culprit_share
    slower = standing.slower_by is not None and standing.slower_by >= policy.min_slower_by
    if recurs and slower:
        first = _since(culprits, top, policy)
        step = rows[first][top]
        result[keys[top]] = RankStanding(
            straggler=True,
            slower_by=standing.slower_by,
            culprit_share=standing.culprit_share,
            since_step=step.step,
            since_t=step.t,
        )
    return result


def _busy_s(step: StepRecord, synchronised: bool) -> float:
    """The step's own work: its wall less what it waited on the others."""
    return step.wall_s - (step.backward_s or 0.0) if synchronised else step.wall_s


def _culprit(row: Sequence[StepRecord], synchronised: bool) -> int:
    """The rank the others waited on in this step: the least wait, or the longest wall."""
    if synchronised:
        return min(range(len(row)), key=lambda i: row[i].backward_s or 0.0)
    return max(range(len(row)), key=lambda i: row[i].wall_s)


def _slower_by(
    rows: Sequence[Sequence[StepRecord]], index: int, synchronised: bool
) -> float | None:
    own = statistics.median(_busy_s(row[index], synchronised) for row in rows)
    peers = [_busy_s(s, synchronised) for row in rows for i, s in enumerate(row) if i != index]
    base = statistics.median(peers)
    return round(own / base - 1.0, 4) if base > 0 else None


def _since(culprits: Sequence[int], top: int, policy: RankPolicy) -> int:
    """The first step of its current run as the culprit: going back block by block
    (`min_steps` steps each) while it was the culprit in `culprit_share` of a block's steps,
    the earliest step of those blocks where it was the culprit."""
    block = policy.min_steps
    start = len(culprits)
    while start > 0:
        part = culprits[max(start - block, 0) : start]
        if part.count(top) / len(part) < policy.culprit_share:
            break
        start = max(start - block, 0)
    tail = culprits[start:]
    return start + tail.index(top) if top in tail else len(culprits) - 1


def ended(
    process: ProcessState,
    newest_t: float | None,
    host: Sequence[HostSample],
    policy: RankPolicy,
    run_ended: bool = False,
) -> str | None:
    """`exit N`, `signal NAME`, `silent since <ISO time>`, or None while it seems to run."""
    if process.bye is not None:
        return _said(process.bye)
    last_t = process.last_t
    if last_t is None:
        return None
    peers_went_on = newest_t is not None and newest_t - last_t > policy.silent_after_s
    if run_ended or peers_went_on or _gone_from_host(process.pid, last_t, host):
        return "silent since " + datetime.fromtimestamp(last_t, UTC).isoformat(timespec="seconds")
    return None


def _said(bye: Bye) -> str:
    if isinstance(bye.signal, str):
        return f"signal {bye.signal}"
    if isinstance(bye.exit_code, int):
        return f"exit {bye.exit_code}"
    return "exit"  # a `bye` from before the agent recorded the status


def _gone_from_host(pid: int, last_t: float, host: Sequence[HostSample]) -> bool:
    """The newest host sample, taken after its last record, no longer lists a process that an
    earlier sample listed."""
    recent = list(islice(reversed(host), HOST_SAMPLES_READ))[::-1]
    if len(recent) < 2 or recent[-1].t <= last_t:
        return False
    seen = any(p.pid == pid for sample in recent[:-1] for p in sample.processes)
    return seen and all(p.pid != pid for p in recent[-1].processes)
