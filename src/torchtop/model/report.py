"""A whole report: where the data came from, the job's verdict, each rank's, and the trials."""

from __future__ import annotations

import msgspec

from torchtop.model.analysis import RankAnalysis
from torchtop.model.findings import Verdict
from torchtop.model.trial_entry import TrialEntry


class RankReport(msgspec.Struct, frozen=True):
    analysis: RankAnalysis
    verdict: Verdict


class Report(msgspec.Struct, frozen=True):
    source_kind: str
    """trace | run | attach | demo | tune"""
    paths: tuple[str, ...]
    job: RankAnalysis
    """The job as a whole: a single rank's analysis, or the ranks' means."""
    verdict: Verdict
    ranks: tuple[RankReport, ...] = ()
    command: tuple[str, ...] | None = None
    pid: int | None = None
    notes: tuple[str, ...] = msgspec.field(default_factory=tuple)
    trials: tuple[TrialEntry, ...] = ()
    """A/B trials of fixes (`tune`'s, or those accepted in the dashboard), each the contract's
    `trials` entry: `fixes`, `baseline_steps_per_s`, `trial_steps_per_s`, `speedup`, `kept`,
    and the trial's evidence (`relaunch.trial.trial_entry`)."""
