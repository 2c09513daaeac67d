"""A whole report: where the data came from, the job's verdict, each rank's, and the trials."""

from __future__ import annotations

import msgspec

from torchtop.model.analysis import RankAnalysis
from torchtop.model.findings import Verdict
from torchtop.model.trial_entry import TrialEntry


class RankStanding(msgspec.Struct, frozen=True):
    """How one rank of a recorded job of several compares with its peers, and how it ended
    (`assess.ranks`); traces have none, so their reports do not change."""

    straggler: bool = False
    slower_by: float | None = None
    """How much longer its busy time (step wall minus its wait) is than its peers' median."""
    culprit_share: float | None = None
    """The share of the judged steps in which the others waited on it."""
    since_step: int | None = None
    since_t: float | None = None
    """The first step (and its Unix end time) of its current run as the culprit."""
    ended: str | None = None
    """`exit N`, `signal NAME`, `silent since <ISO time>`, or None while it runs."""


class RankReport(msgspec.Struct, frozen=True):
    analysis: RankAnalysis
    verdict: Verdict
    standing: RankStanding | None = None


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
