"""Stragglers by recurrence and dead or silent ranks: pure judgement over the ranks' records.

In synchronous data parallelism every rank's step wall is about the same (the fast ranks wait in
the all-reduce), so a straggler shows in what it does NOT wait: the agent times `backward()`,
which under DDP returns only once every rank's gradients are reduced. In each step the rank
with the most busy time (wall less that wait: the least wait, as the walls are about equal) is
the one the others waited on (the culprit); a straggler is the culprit in most of the newest
steps all ranks share (`RankPolicy.culprit_share`), not in one outlier. Ranks that do not
synchronise are compared the same way: their walls differ, and the busiest is the slowest.

A rank's end comes from its `bye` (exit status or signal); without one, it is silent once a
peer went on for `silent_after_s` past its last record, its process left the host samples, or
the run ended. Each judgement is a function of the records alone, so tests plant series.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from itertools import islice

import msgspec
import numpy as np

from torchtop.assess.ending import bye_words
from torchtop.diagnosis.schema import RankPolicy
from torchtop.model.report import RankStanding
from torchtop.runs.records import HostSample
from torchtop.runs.state import ProcessState, StepRecord

Judge = Callable[[Sequence[ProcessState], Sequence[int], RankPolicy], dict[int, RankStanding]]
"""The standings of the processes at the positions judged (the positions they are keyed by)."""
SINCE_WINDOWS = 4
"""How far back `since` may reach, in judged windows: each tick reads at most this many
windows of each rank's newest steps, not its whole buffer (512 ranks x 4096 steps)."""
HOST_SAMPLES_READ = 10
"""The newest host samples searched for a rank's process (it must have been seen there once)."""


def standings(
    processes: Sequence[ProcessState],
    policy: RankPolicy,
    host: Sequence[HostSample] = (),
    run_ended: bool = False,
    node_host: Mapping[str, Sequence[HostSample]] | None = None,
    judge: Judge | None = None,
) -> list[RankStanding]:
    """Each process's standing, in the order given (none for a job of one rank). Ranks are
    told apart by position, not pid, so processes of several nodes may share pids; a process
    of a shared run folder is looked for in its own node's host samples (`node_host`).
    `judge` (the positions judged -> their standings) stands in for `newest_stragglers`: a
    live view passes one that keeps its work from tick to tick (`assess.rank_cache`)."""
    if len(processes) < 2:
        return []
    newest_t = max((p.last_t for p in processes if p.last_t is not None), default=None)
    # A rank that fell silent while its peers went on shares no new steps with them: judged
    # with them, it would hide a straggler among the ranks still running.
    running = [
        i
        for i, p in enumerate(processes)
        if p.last_t is None or newest_t is None or newest_t - p.last_t <= policy.silent_after_s
    ]
    judged = running if len(running) >= 2 else list(range(len(processes)))
    slow = (judge or newest_stragglers)(processes, judged, policy)
    endings = [
        ended(process, newest_t, _host_of(process, host, node_host), policy, run_ended)
        for process in processes
    ]
    return [
        msgspec.structs.replace(
            slow.get(i, RankStanding()),
            ended=end,
            # Where it was when it died or hung; a clean exit's last stack tells nothing.
            last_stack=process.last_stack if end is not None and end != "exit 0" else None,
        )
        for i, (process, end) in enumerate(zip(processes, endings, strict=True))
    ]


def newest_stragglers(
    processes: Sequence[ProcessState], judged: Sequence[int], policy: RankPolicy
) -> dict[int, RankStanding]:
    """`stragglers` over the newest `SINCE_WINDOWS` windows of steps of the processes at
    the positions `judged`, keyed by position."""
    newest = SINCE_WINDOWS * policy.window_steps
    return stragglers(
        {i: list(islice(reversed(processes[i].steps), newest)) for i in judged}, policy
    )


def stragglers(
    series: Mapping[int, Sequence[StepRecord]], policy: RankPolicy
) -> dict[int, RankStanding]:
    """The straggler among `series` (key -> its steps), if one recurs, with `slower_by` and
    `since`; every key gets its culprit share."""
    by_number = {key: {s.step: s for s in steps} for key, steps in series.items()}
    shared = sorted(set.intersection(*(set(steps) for steps in by_number.values())))
    keys = list(series)
    if len(keys) < 2 or len(shared) < policy.min_steps:
        return {}
    rows = [[by_number[k][n] for k in keys] for n in shared]
    return judged_stragglers(keys, rows, [culprit(row) for row in rows], policy)


def judged_stragglers(
    keys: Sequence[int],
    rows: Sequence[Sequence[StepRecord]],
    culprits: Sequence[int],
    policy: RankPolicy,
    busy: Callable[[Sequence[Sequence[StepRecord]]], np.ndarray] | None = None,
) -> dict[int, RankStanding]:
    """`stragglers` once the shared steps are laid out: `rows` (one per shared step, oldest
    first, each the keys' records in order) and each row's culprit (a position in `keys`);
    `busy` gives the rows' busy times as a matrix (`busy_matrix`, or kept from tick to tick)."""
    window = slice(-policy.window_steps, None)
    judged = list(culprits[window])
    shares = [round(judged.count(index) / len(judged), 4) for index in range(len(keys))]
    result = {
        key: RankStanding(culprit_share=share) for key, share in zip(keys, shares, strict=True)
    }
    top = max(range(len(keys)), key=judged.count)
    slower_by = _slower_by((busy or busy_matrix)(rows[window]), top)
    recurs = shares[top] >= policy.culprit_share
    if recurs and slower_by is not None and slower_by >= policy.min_slower_by:
        step = rows[_since(culprits, top, policy)][top]
        result[keys[top]] = RankStanding(
            straggler=True,
            slower_by=slower_by,
            culprit_share=shares[top],
            since_step=step.step,
            since_t=step.t,
        )
    return result


def _busy_s(step: StepRecord) -> float:
    """The step's own work: its wall less its time in backward(), where DDP waits for the
    others (the plain wall where no backward was timed)."""
    return step.wall_s - (step.backward_s or 0.0)


def culprit(row: Sequence[StepRecord]) -> int:
    """The rank the others waited on in this step: the most busy time. With DDP the walls are
    about equal, so it is the rank that waited least; ranks that do not synchronise differ in
    their walls, and the busiest is the slowest."""
    return max(range(len(row)), key=lambda i: _busy_s(row[i]))


def busy_matrix(rows: Sequence[Sequence[StepRecord]]) -> np.ndarray:
    """Each step's busy time (s), a row per step and a column per rank."""
    return np.array([[_busy_s(s) for s in row] for row in rows], dtype=np.float64)


def _slower_by(busy: np.ndarray, index: int) -> float | None:
    own = _median(busy[:, index])
    base = _median(np.delete(busy, index, axis=1).ravel())
    return round(own / base - 1.0, 4) if base > 0 else None


def _median(values: np.ndarray) -> float:
    """`statistics.median`, to the bit, in numpy's time: 512 ranks x 50 steps is 25,600
    values a tick."""
    middle = len(values) // 2
    if len(values) % 2:
        return float(np.partition(values, middle)[middle])
    low, high = np.partition(values, [middle - 1, middle])[middle - 1 : middle + 1]
    return (float(low) + float(high)) / 2


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
        return bye_words(process.bye)
    last_t = process.last_t
    if last_t is None:
        return None
    peers_went_on = newest_t is not None and newest_t - last_t > policy.silent_after_s
    # The pid as its own node knows it: a shared folder renumbers pids that two nodes share.
    pid = process.hello.pid if process.hello is not None and process.hello.pid else process.pid
    if run_ended or peers_went_on or _gone_from_host(pid, last_t, host):
        return "silent since " + datetime.fromtimestamp(last_t, UTC).isoformat(timespec="seconds")
    return None


def _host_of(
    process: ProcessState,
    host: Sequence[HostSample],
    node_host: Mapping[str, Sequence[HostSample]] | None,
) -> Sequence[HostSample]:
    if node_host is not None and process.node is not None:
        return node_host.get(process.node, ())
    return host


def _gone_from_host(pid: int, last_t: float, host: Sequence[HostSample]) -> bool:
    """The newest host sample, taken after its last record, no longer lists a process that an
    earlier sample listed."""
    recent = list(islice(reversed(host), HOST_SAMPLES_READ))[::-1]
    if len(recent) < 2 or recent[-1].t <= last_t:
        return False
    seen = any(p.pid == pid for sample in recent[:-1] for p in sample.processes)
    return seen and all(p.pid != pid for p in recent[-1].processes)
