"""Each rank's standing: the straggler (`assess.stragglers`) and how every rank ended.

In synchronous data parallelism every rank's step wall is about the same (the fast ranks wait in
the all-reduce), so a straggler shows in what it does NOT wait: the agent times `backward()`,
which under DDP returns only once every rank's gradients are reduced. The rank with the most
busy time (wall less that wait) is the one the others waited on; `assess.stragglers` judges it
over every step the running ranks share, in blocks. Ranks that do not synchronise are compared
the same way: their walls differ, and the busiest is the slowest.

A rank's end comes from its `bye` (exit status or signal); without one, it is silent once a
peer went on for `silent_after_s` past its last record, its process left the host samples, or
the run ended. Each judgement is a function of the records alone, so tests plant series.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from itertools import islice

import msgspec

from torchtop.assess.ending import bye_words
from torchtop.assess.stragglers import block_stragglers
from torchtop.diagnosis.schema import RankPolicy
from torchtop.model.report import RankStanding
from torchtop.runs.records import HostSample
from torchtop.runs.state import ProcessState

Judge = Callable[[Sequence[ProcessState], Sequence[int], RankPolicy], dict[int, RankStanding]]
"""The standings of the processes at the positions judged (the positions they are keyed by)."""
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
    `judge` (the positions judged -> their standings) stands in for `block_stragglers`."""
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
    slow = (judge or block_stragglers)(processes, judged, policy)
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
