"""Other tenants of the job's node: the cores they take, and the share of the job's time lost.

From the newest host samples (`samples/host.jsonl`, one a second, `collectors/others.py`):

- `other_cores_used`: the mean CPU of every process outside the job and torchtop's own;
- the contenders: those of them busy through most of the window, named with pid, command and
  cores. A process that came and went (a compile, another test's short job) is not one, and
  neither is the dust of many idle daemons: a contender is busy in `SUSTAINED_SHARE` of the
  samples;
- `runqueue_wait_share`: the time the job's threads waited on a run queue as a share of the time
  they were ready to run (their CPU time plus that wait). A thread of a CPU-bound step that waits
  half the time it could run takes twice as long: this is the share of its CPU work's wall time
  lost to a full machine. The job's own oversubscription (more threads than cores) shows here
  too, which is why the contention rule also asks for contenders;
- `host_steal_share`: the machine's CPU time the hypervisor gave to other guests.

Pure: samples in, metrics out; nothing is measured where no sample says so (None).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import islice

import msgspec

from torchtop.model.analysis import Metrics
from torchtop.runs.records import HostSample

RECENT_SAMPLES = 15
"""The window: about the last 15 s."""
MIN_SAMPLES = 3
"""Fewer samples with the others' CPU measured: not measured."""
SUSTAINED_SHARE = 0.6
"""A contender is busy in at least this share of the window's samples."""
BUSY_PCT = 10.0
"""Busy in a sample: at least this % of one core."""
NAMED = 3
"""Contenders named in the finding's line; the rest are counted."""


@dataclass
class _Tenant:
    pid: int
    command: str
    busy_samples: int = 0
    cpu_pct_sum: float = 0.0


def contention_metrics(host: Sequence[HostSample]) -> Metrics:
    """`other_cores_used`, `contender_cores`, `contenders`, `runqueue_wait_share` and
    `host_steal_share` over the newest `RECENT_SAMPLES` host samples."""
    recent = list(islice(reversed(host), RECENT_SAMPLES))[::-1]
    measured = [s for s in recent if _number(s.others_cpu_pct) is not None]
    metrics: Metrics = {
        "other_cores_used": None,
        "contender_cores": None,
        "contenders": None,
        "runqueue_wait_share": runqueue_wait_share(recent),
        "host_steal_share": _mean_share([_number(s.steal_pct) for s in recent]),
    }
    if len(measured) < MIN_SAMPLES:
        return metrics
    tenants = sorted(_tenants(measured), key=lambda t: -t.cpu_pct_sum)
    needed = SUSTAINED_SHARE * len(measured)
    sustained = [t for t in tenants if t.busy_samples >= needed]
    cores = [t.cpu_pct_sum / 100 / len(measured) for t in sustained]
    metrics.update(
        other_cores_used=round(
            sum(_number(s.others_cpu_pct) or 0.0 for s in measured) / 100 / len(measured), 2
        ),
        contender_cores=round(sum(cores), 2),
        contenders=_named(sustained, cores),
    )
    return metrics


def runqueue_wait_share(samples: Sequence[HostSample]) -> float | None:
    """The job's threads' run-queue wait over their wait plus CPU time, in `samples`: each
    process of the job's tree where both were measured."""
    waited = ran = 0.0
    for sample in samples:
        for process in sample.processes:
            wait_pct = _number(process.runqueue_wait_pct)
            if wait_pct is not None and process.cpu_pct is not None:
                waited += wait_pct
                ran += float(process.cpu_pct)
    if waited + ran <= 0:
        return None
    return round(waited / (waited + ran), 3)


def _tenants(samples: Sequence[HostSample]) -> list[_Tenant]:
    found: dict[tuple[int, str], _Tenant] = {}
    for sample in samples:
        others = sample.others if isinstance(sample.others, list) else []
        for process in others:
            command = process.command if isinstance(process.command, str) else None
            command = command or process.name or "?"
            tenant = found.setdefault((process.pid, command), _Tenant(process.pid, command))
            pct = float(process.cpu_pct or 0.0)
            tenant.cpu_pct_sum += pct
            tenant.busy_samples += pct >= BUSY_PCT
    return list(found.values())


def _named(tenants: Sequence[_Tenant], cores: Sequence[float]) -> str:
    """`pid 4242 (python -c ...): 0.98 cores, ...`; `none` where no process is a contender."""
    if not tenants:
        return "none"
    named = [
        f"pid {t.pid} ({t.command}): {c:.2f} cores"
        for t, c in zip(tenants[:NAMED], cores[:NAMED], strict=True)
    ]
    rest = len(tenants) - NAMED
    if rest > 0:
        named.append(f"and {rest} more using {sum(cores[NAMED:]):.2f} cores")
    return ", ".join(named)


def _number(value: float | int | msgspec.UnsetType | None) -> float | None:
    """A reading as a float; None where it was not measured, or not written (an older folder)."""
    return None if value is None or isinstance(value, msgspec.UnsetType) else float(value)


def _mean_share(values_pct: Sequence[float | int | None]) -> float | None:
    known = [float(v) for v in values_pct if v is not None]
    return round(sum(known) / len(known) / 100, 3) if known else None
