"""Which trace files are ranks of one job, and which are separate jobs.

A folder may hold one job's ranks (each rank's files, one per profiled span) or traces that have
nothing to do with each other (five models profiled one by one). Pooling the second kind gives a
job of "5 ranks" with one verdict that describes none of them, so files join a job only when they
look like its ranks:

- a rank is known (Kineto's `distributedInfo`, or `rank3` in the file name); a file without one
  is a job of its own, unless it is another span of the same worker (the same file-name stem);
- the same world size and backend, and the same GPU model, where both files say;
- a rank's spans never profile the same step twice (one process numbers its steps once), and
  a rank joins a job when its first file has a step in common with the job's (ranks of a job
  profile together; later windows, timed by each rank's own clock, need not line up).

Files without step markers cannot be compared by step and are not split by it. Each file is
placed in the first job, in the files' order, that it fits, so a job's ranks keep their order.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from torchtop.model.analysis import RankAnalysis


class _File(msgspec.Struct, frozen=True):
    """What placing a file needs from its analysis."""

    analysis: RankAnalysis
    steps: frozenset[int] | None
    """Its `ProfilerStep#N` numbers; None without markers."""

    @property
    def world(self) -> tuple[object, object]:
        info = self.analysis.infos[0]
        return (info.world_size, info.backend)

    @property
    def device(self) -> str | None:
        devices = self.analysis.devices
        return devices[0].name if devices else None


def split_jobs(analyses: Sequence[RankAnalysis]) -> tuple[list[list[RankAnalysis]], list[str]]:
    """The files' analyses grouped into jobs (in the files' order), and why the jobs are apart
    (each reason once; empty for one job)."""
    jobs: list[list[_File]] = []
    reasons: list[str] = []
    for analysis in analyses:
        numbers = frozenset(s.number for s in analysis.steps)
        marked = analysis.metrics.get("has_step_markers") and numbers
        file = _File(analysis, numbers if marked else None)
        why = [(job, apart(file, job)) for job in jobs]
        home = next((job for job, reason in why if reason is None), None)
        if home is None:
            reasons.extend(r for _, r in why[:1] if r is not None and r not in reasons)
            jobs.append([file])
        else:
            home.append(file)
    return [[f.analysis for f in job] for job in jobs], reasons


def apart(file: _File, job: Sequence[_File]) -> str | None:
    """Why `file` is not a rank (or a span of a rank) of `job`; None when it fits."""
    first = job[0]
    if file.analysis.rank is None or first.analysis.rank is None:
        if all(m.analysis.label == file.analysis.label for m in job):
            return _steps_apart(file, job, same_rank=True)
        return "no rank recorded (Kineto's distributedInfo)"
    if file.world != first.world:
        return f"different world sizes or backends ({_world(first)} and {_world(file)})"
    if file.device and first.device and file.device != first.device:
        return f"different GPUs ({first.device} and {file.device})"
    same = [m for m in job if m.analysis.rank == file.analysis.rank]
    if same:  # another span of a rank the job has: its windows need not line up with others'
        return _steps_apart(file, same, same_rank=True)
    return _steps_apart(file, job, same_rank=False)


def _steps_apart(file: _File, job: Sequence[_File], same_rank: bool) -> str | None:
    """Spans of one rank share no step; different ranks of one job share at least one."""
    known = [m.steps for m in job if m.steps is not None]
    if file.steps is None or not known:
        return None
    seen = frozenset[int]().union(*known)
    if same_rank and file.steps & seen:
        return "the same steps profiled twice by one rank or worker"
    if not same_rank and not file.steps & seen:
        return f"no step in common ({_span(seen)} and {_span(file.steps)})"
    return None


def _world(file: _File) -> str:
    size, backend = file.world
    return f"{size if size is not None else '?'} {backend or '?'}"


def _span(numbers: frozenset[int]) -> str:
    low, high = min(numbers), max(numbers)
    return f"#{low}" if low == high else f"#{low}-#{high}"
