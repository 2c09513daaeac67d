"""A whole report: where the data came from, the job's verdict, and each rank's."""

from __future__ import annotations

from dataclasses import dataclass, field

from torchtop.model.analysis import RankAnalysis
from torchtop.model.findings import Verdict


@dataclass(frozen=True)
class RankReport:
    analysis: RankAnalysis
    verdict: Verdict


@dataclass(frozen=True)
class Report:
    source_kind: str
    """trace | run | attach | demo | tune"""
    paths: tuple[str, ...]
    job: RankAnalysis
    """The job as a whole: a single rank's analysis, or the ranks' means."""
    verdict: Verdict
    ranks: tuple[RankReport, ...] = ()
    command: tuple[str, ...] | None = None
    pid: int | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)
