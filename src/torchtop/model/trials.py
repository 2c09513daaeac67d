"""Trials as data: a trial's measured runs, the trial, its events and outcomes, the proposal.

`trials` measures and decides (`trials.trial.run_trial`, `trials.holding`); the
dashboard shows what it did and the report records it. The values they pass live down here so
that the TUI and the report can hold a trial without importing the code that starts and stops
jobs: only data crosses, never process control.

A trial says what it did as typed events (`Stage`: a step in words; `Measured`: one run's
steps/s; `Decided`: kept or reverted, and why), so a listener reads fields instead of parsing
text; `tune` prints each event's `text`, the same line it always printed.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from torchtop.model.findings import Fix
from torchtop.model.plan import AppliedFix, LaunchPlan, NotApplicable
from torchtop.model.rounds import CANCELLED, FAILED, RoundsEstimate
from torchtop.model.trial_entry import (
    MeasuredAs,
    RunEntry,
    SinceRelaunch,
    WarmupEntry,
)


def steps_per_s(walls_s: Sequence[float]) -> float | None:
    """The rate of step times (seconds): their count over their sum; None when there is none."""
    total_s = sum(walls_s)
    return len(walls_s) / total_s if walls_s and total_s > 0 else None


@dataclass(frozen=True)
class Span:
    """How much of a run to leave out as warm-up, and how much to measure after it."""

    steps: int
    """At least this many steady-state steps (enough for the rank test, about 8 a side)."""
    warmup_steps: int
    """At least this many steps of warm-up, whatever the pipeline (imports, allocator, compiles)."""
    min_duration_s: float = 0.0
    """And at least this long: a fast job's periodic costs (worker bursts, an epoch boundary)
    fall outside a few steps."""
    settle_steps: int = 5
    """Stationary: the median of the last this many steps against the median of as many before."""
    settle_tolerance: float = 0.10
    """...within this fraction: under the 15% a trial's claim may miss its long run by, and
    above the wobble of a steady job's medians of 5 on this shared machine (a sleep-bound job at
    load 9 on 2 cores: 5% typically, 8% at the 75th percentile, 12% at the 90th)."""
    max_warmup_steps: int = 200
    """A job that never settles stops warming up here (after its queued batches)."""
    max_warmup_s: float = 10.0
    """...or after this long: a run must fit in a trial, several of them in tune's budget."""

    def entry(self) -> MeasuredAs:
        return MeasuredAs(
            self.steps,
            self.warmup_steps,
            self.min_duration_s,
            self.settle_steps,
            self.settle_tolerance,
            self.max_warmup_steps,
            self.max_warmup_s,
        )


@dataclass(frozen=True)
class Warmup:
    """The warm-up one run used, recorded with its measurement."""

    steps: int
    """Timed steps left out before the measured span."""
    queued_batches: int
    """`num_workers * prefetch_factor` as the run's agent saw its DataLoader (0: no workers)."""
    ended_by: str
    """`stationary`, `step cap` or `time cap`."""
    duration_s: float

    def entry(self) -> WarmupEntry:
        return WarmupEntry(
            self.steps, self.queued_batches, self.ended_by, round(self.duration_s, 3)
        )


@dataclass(frozen=True)
class MeasuredRun:
    """One measured launch: its steady-state step times after the warm-up it used.
    (`trials.measure.Measurement` adds what the launch's agent said about the job.)"""

    run_dir: Path
    step_wall_s: tuple[float, ...]
    warmup_steps: int
    warmup: Warmup | None = None
    """The warm-up this run used (None for a measurement made without the rule)."""
    other_cores: float | None = None
    """Cores that processes outside the job (and torchtop) used during the run, on average
    (`trials.load`; None: not measured)."""

    @property
    def duration_s(self) -> float:
        return sum(self.step_wall_s)

    @property
    def steps_per_s(self) -> float:
        return steps_per_s(self.step_wall_s) or 0.0

    @property
    def median_step_ms(self) -> float:
        return statistics.median(self.step_wall_s) * 1000.0

    @property
    def mad_step_ms(self) -> float:
        median = statistics.median(self.step_wall_s)
        return statistics.median(abs(s - median) for s in self.step_wall_s) * 1000.0

    def entry(self, with_steps: bool = True) -> RunEntry:
        return RunEntry(
            run_dir=str(self.run_dir),
            steps=len(self.step_wall_s),
            warmup_steps=self.warmup_steps,
            steps_per_s=round(self.steps_per_s, 4),
            median_step_ms=round(self.median_step_ms, 3),
            mad_step_ms=round(self.mad_step_ms, 3),
            duration_s=round(self.duration_s, 3),
            warmup=self.warmup.entry() if self.warmup is not None else None,
            step_wall_s=tuple(round(s, 6) for s in self.step_wall_s) if with_steps else None,
            other_cores=self.other_cores,
        )


@dataclass(frozen=True)
class Trial:
    """An A/B trial of one fix: both variants' runs, the decision and the plans it compared.
    Its report entry is `trials.trial.trial_entry(trial)`."""

    number: int
    fixes: tuple[AppliedFix, ...]
    kept: bool
    reason: str
    before: tuple[MeasuredRun, ...]
    after: tuple[MeasuredRun, ...]
    p_value: float | None
    plan_before: LaunchPlan
    plan_after: LaunchPlan
    duration_s: float
    measured_as: Span | None = None
    """The rule every run was measured by (None: not recorded)."""
    predicted_gain: float | None = None
    """The speedup bound its fix's finding predicted (None: not predicted)."""
    estimate: RoundsEstimate | None = None
    """The rounds' ratios and the interval the decision read (None: no round was completed)."""
    effect: str | None = None
    """`model.rounds.FASTER`, `SLOWER`, `NO_EFFECT` or `INCONCLUSIVE`; None where a run
    failed."""
    more_rounds: int | None = None
    """Inconclusive: the rounds more that would decide it at the spread measured."""
    decides_with: str | None = None
    """Inconclusive: what would decide it, in words (`about 4 more rounds (about 140 s) ...`)."""
    load_change: str | None = None
    """How the machine's other load changed under the trial's runs (`trials.load`); None:
    steady, or not measured."""
    cancelled: bool = False
    """The user ended it (`q`) before it decided: `before` and `after` hold the runs measured
    by then, `kept` is False."""

    @property
    def outcome(self) -> str | None:
        """The decision's outcome as every surface names it (`model.rounds`): the effect, or
        `failed` where a run failed, `cancelled`; None for a kept trial made without one."""
        if self.cancelled:
            return CANCELLED
        if self.effect is not None:
            return self.effect
        return None if self.kept else FAILED

    @property
    def baseline_steps_per_s(self) -> float:
        return pooled_rate(self.before)

    @property
    def trial_steps_per_s(self) -> float | None:
        return pooled_rate(self.after) if self.after else None

    @property
    def speedup(self) -> float | None:
        """The rounds' geometric-mean ratio; the pooled rates' ratio where no round completed."""
        if self.estimate is not None:
            return self.estimate.speedup
        after = self.trial_steps_per_s
        return after / self.baseline_steps_per_s if after is not None else None


def walls_of(runs: Sequence[MeasuredRun]) -> list[float]:
    """Every step time of `runs`, pooled in order."""
    return [s for run in runs for s in run.step_wall_s]


def pooled_rate(runs: Sequence[MeasuredRun]) -> float:
    return steps_per_s(walls_of(runs)) or 0.0


@dataclass(frozen=True)
class Stage:
    """A step of the trial, said in words ("stopping the job, ...")."""

    text: str


@dataclass(frozen=True)
class Measured:
    """Trial `trial`'s run `label` (`before-1`, `after-1`, ... as in `RUN/trials/NN/`) measured."""

    trial: int
    label: str
    steps_per_s: float
    other_cores: float | None = None
    """Cores other processes used meanwhile (None: not measured)."""

    @property
    def text(self) -> str:
        said = f"trial {self.trial} {self.label}: {self.steps_per_s:.2f} steps/s"
        if self.other_cores is None:
            return said
        return f"{said} (other processes: {self.other_cores:.1f} cores)"


@dataclass(frozen=True)
class Decided:
    """Trial `trial` kept its fix or reverted it, and why (`NN.json` is written)."""

    trial: int
    kept: bool
    reason: str

    @property
    def text(self) -> str:
        return f"trial {self.trial}: {'kept' if self.kept else 'reverted'}: {self.reason}"


TrialEvent = Stage | Measured | Decided


@dataclass(frozen=True)
class Proposal:
    """A fix planned on the job as it runs now: the plan with it, or why there is none."""

    fix: Fix
    before: LaunchPlan
    after: LaunchPlan | None
    refusal: NotApplicable | None = None
    predicted_gain: float | None = None

    @classmethod
    def of(cls, fix: Fix, before: LaunchPlan, planned: LaunchPlan | NotApplicable) -> Proposal:
        """The proposal `plan_fix(fix, before, ...)` makes: its plan, or its refusal."""
        if isinstance(planned, NotApplicable):
            return cls(fix, before, None, planned)
        return cls(fix, before, planned)


@dataclass(frozen=True)
class TrialOutcome:
    trial: Trial | None
    """None when no trial was decided: it could not run, or it was cancelled."""
    plan: LaunchPlan | None
    """What the job runs with now; None when no job was started again (cancelled)."""
    run_dir: Path | None
    """The run folder of the job that runs now."""
    error: str | None = None
    cancelled: bool = False

    @property
    def kept(self) -> bool:
        return self.trial is not None and self.trial.kept


@dataclass(frozen=True)
class Holding:
    """The relaunched job so far, against the trial that kept its fix (`trials.holding`)."""

    steps: int
    """Steady-state steps since the relaunch (warm-up and profiler windows left out)."""
    duration_s: float
    steps_per_s: float | None
    speedup: float | None
    """`steps_per_s` over the trial's "before" rate: the gain the fix gives in the long run."""
    claimed_speedup: float | None
    claimed_steps_per_s: float | None
    holds: bool | None
    """False: no longer holds (the recent spans fall short of the trial beyond noise, or run
    back at the rate before the fix); None: too few steps yet."""
    reason: str
    recent_steps: int = 0
    recent_steps_per_s: float | None = None
    p_value: float | None = None
    margin: float | None = None
    gain_gone: bool | None = None
    """True: the job is back within the margin of the trial's "before" rate (None: not judged)."""

    def entry(self, checked_at: str) -> SinceRelaunch:
        """The report's `since_relaunch` entry of a kept trial."""
        return SinceRelaunch(
            steps=self.steps,
            duration_s=round(self.duration_s, 3),
            steps_per_s=_round(self.steps_per_s),
            speedup=_round(self.speedup),
            holds=self.holds,
            reason=self.reason,
            recent_steps=self.recent_steps,
            recent_steps_per_s=_round(self.recent_steps_per_s),
            p_value=self.p_value,
            margin=_round(self.margin),
            checked_at=checked_at,
            gain_gone=self.gain_gone,
        )


@dataclass(frozen=True)
class RevertOutcome:
    """A kept fix taken back by the user: the job started again with the plan before it."""

    trial: Trial
    plan: LaunchPlan | None
    """What the job runs with now; None when nothing was started (cancelled)."""
    run_dir: Path | None
    holding: Holding | None
    """The relaunched job's last figures, on which the user reverted."""
    cancelled: bool = False


def _round(value: float | None) -> float | None:
    return round(value, 4) if value is not None else None
