"""The assessment of a job of several ranks watched without an agent: each rank from its own
stack samples, and the job's verdict across them.

`attach` on a launcher (or on any rank) records the job it found in `run.json` (`attached`):
the ranks' pids and numbers. The stack records already hold each process apart, so each rank
is `assess.attached`'s assessment of a view of the run state that keeps only that rank's
samples, and the job is the same assessment over all the ranks' samples pooled (each sample
one look at one rank's loop), relabelled with the launcher and the count of ranks. The view
marks each rank's process `main`, so the ranks of `mp.spawn` (children of a python parent,
which the process tree calls workers) count as training processes too. A rank that disappears
from the host samples while watched is `silent since` its last sample, the ranks table's
wording; the others go on. A job of one process, or one with an agent, is left to
`assess.attached` as before.

A rank its launcher restarted (`samples/ranks.jsonl`: its number under a new pid) stays one
rank: its figures pool the samples of all its processes, which stay under their own pids, so
the old process's are kept while the new one is sampled; how it ended is its newest process's,
and its `restarts` list the earlier ones. A number first seen in that journal (a rank that
joined) is a rank like the others.
"""

from __future__ import annotations

import dataclasses
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime

import msgspec
from msgspec.structs import replace

from torchtop.assess.attached import assess_attached
from torchtop.assess.context import Context
from torchtop.diagnosis.rules import RuleTree
from torchtop.model.analysis import RankAnalysis
from torchtop.model.attach import AttachedRank
from torchtop.model.report import RankReport, RankStanding, Report, Restart
from torchtop.runs.records import HostSample, RanksSeen, StackProcess, StacksSample
from torchtop.runs.state import RunState


def assess_attached_ranks(
    state: RunState,
    windows: Mapping[int, RankAnalysis],
    tree: RuleTree,
    kind: str = "attach",
    *,
    context: Context,
) -> Report:
    """`assess_attached`, with each rank apart where `run.json` names several."""
    target = state.launch.attached
    if isinstance(target, msgspec.UnsetType):
        return assess_attached(state, windows, tree, kind, context=context)
    followed = followed_ranks(target.ranks, state.ranks_seen)
    target = replace(target, ranks=tuple(rank for rank, _ in followed))
    if state.training_processes or len(target.ranks) < 2:
        own = assess_attached(state, windows, tree, kind, context=context)
        return replace(own, attached=target)
    pids = [pid for rank, earlier in followed for pid in (rank.pid, *earlier)]
    local = len(target.ranks)
    pooled = assess_attached(
        only_ranks(state, pids), {}, tree, kind, local, target.ranks[0], context=context
    )
    ranks = tuple(_rank_report(state, rank, tree, kind, local, context) for rank in followed)
    job = replace(pooled.job, label=target.job_words)
    return replace(pooled, job=job, ranks=ranks, attached=target)


def followed_ranks(
    found: Iterable[AttachedRank], seen: Iterable[RanksSeen]
) -> list[tuple[AttachedRank, dict[int, float]]]:
    """Each rank under its newest pid, with its earlier pids and when each was replaced (the
    time of the record that named the next): the ranks attach found, then each change."""
    newest: dict[int | str, AttachedRank] = {_key(r): r for r in found}
    earlier: dict[int | str, dict[int, float]] = {}
    for record in seen:
        for rank in record.ranks:
            held = newest.get(_key(rank))
            if held is not None and held.pid != rank.pid:
                earlier.setdefault(_key(rank), {})[held.pid] = record.t
            newest[_key(rank)] = rank
    return [(rank, earlier.get(key, {})) for key, rank in newest.items()]


def _key(rank: AttachedRank) -> int | str:
    return rank.rank if rank.rank is not None else f"pid {rank.pid}"


def _rank_report(
    state: RunState,
    followed: tuple[AttachedRank, dict[int, float]],
    tree: RuleTree,
    kind: str,
    local_ranks: int,
    context: Context,
) -> RankReport:
    rank, earlier = followed
    pids = [*earlier, rank.pid]
    own = assess_attached(
        only_ranks(state, pids), {}, tree, kind, local_ranks, rank, context=context
    )
    label = f"rank {rank.rank}" if rank.rank is not None else f"PID {rank.pid}"
    analysis = replace(own.job, rank=rank.rank, label=label)
    ended = _ended(state, rank.pid, tree.settings.ranks.silent_after_s)
    restarts = tuple(
        Restart(pid, until_t, state.stack_samples.get(pid)) for pid, until_t in earlier.items()
    )
    return RankReport(
        analysis,
        own.verdict,
        node=state.launch.host,
        standing=RankStanding(ended=ended),
        pid=rank.pid,
        restarts=restarts,
    )


def only_ranks(state: RunState, pids: Iterable[int]) -> RunState:
    """A view of `state` whose stack records hold only these processes, each as `main` (the
    others' records are left out, so a rank's sample count is its own)."""
    wanted = set(pids)
    kept: deque[StacksSample] = deque()
    for record in state.samples.stacks:
        processes = [
            replace(p, role="main") for p in record.processes if p.pid in wanted and p.threads
        ]
        if processes:
            kept.append(replace(record, processes=processes))
    samples = dataclasses.replace(state.samples, stacks=kept)
    return dataclasses.replace(state, samples=samples)


def _ended(state: RunState, pid: int, silent_after_s: float) -> str | None:
    """`silent since <ISO time>` once the host sampler no longer sees a rank it saw, or its
    stack samples stopped while its peers' went on; None while it seems to run.

    A native chunk's record comes only as the chunk ends, and each rank's chunks run on their
    own clock, up to twice as long as the last (`collectors.pace`): so a rank is overdue only
    `silent_after_s` past the longest chunk it could be in, not past its peers' newest record."""
    host, stacks = state.samples.host, state.samples.stacks
    seen_t = _last_seen(host, pid)
    if seen_t is not None and seen_t < host[-1].t:
        return _silent(seen_t)
    last = _last_record(stacks, pid)
    if last is None:
        return None
    dumped_t, entry = last
    chunk_s = 0 if isinstance(entry.sampler, msgspec.UnsetType) else entry.sampler.chunk_s
    if stacks[-1].t - dumped_t > silent_after_s + 2 * chunk_s:
        return _silent(dumped_t)
    return None


def _last_seen(samples: Sequence[HostSample], pid: int) -> float | None:
    """When the newest sample that lists `pid` was taken (from the newest back: a running
    rank is found in the first)."""
    for sample in reversed(samples):
        if any(p.pid == pid for p in sample.processes):
            return sample.t
    return None


def _last_record(stacks: Sequence[StacksSample], pid: int) -> tuple[float, StackProcess] | None:
    """The newest stack record of `pid`: when it was taken, and the process's entry in it."""
    for sample in reversed(stacks):
        for entry in sample.processes:
            if entry.pid == pid:
                return sample.t, entry
    return None


def _silent(last_t: float) -> str:
    return "silent since " + datetime.fromtimestamp(last_t, UTC).isoformat(timespec="seconds")
