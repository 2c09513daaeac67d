"""`torchtop tune`: diagnose, try the best applicable fix, keep or revert, repeat.

The job first runs as given, measured and then profiled (the baseline). Its diagnosis lists
findings, most important first, each with fixes; the first fix that applies (not a code
change, not a knob whose convergence group was not allowed, not tried before, not already in
effect) is tried in an A/B trial. A kept fix becomes the job as it runs now, and that trial's
run (also profiled) is diagnosed for the next fix; a reverted one leaves the job as it was and
the next fix is tried against a fresh baseline. A trial measures rounds until it can decide
(`trials.decision`), and starts no round that would end past the budget. Tuning ends when no
untried fix applies (every remaining fix gained too little, or none is left), when the time
budget would be overrun, after `max_trials`, or on Ctrl-C (or a SIGTERM to torchtop) after the
baseline: the trial then running is stopped and not kept, and the fixes kept so far stand.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from torchtop.advice.machine import Machine, this_machine
from torchtop.advice.plan import initial_plan, plan_fix
from torchtop.advice.show import format_plan
from torchtop.assess.recorded import analyze_run
from torchtop.diagnosis.rules import RuleTree
from torchtop.model.findings import Fix
from torchtop.model.plan import LaunchPlan, NotApplicable
from torchtop.model.report import Report
from torchtop.model.rounds import INCONCLUSIVE, estimate_claim
from torchtop.model.trials import Trial
from torchtop.runs.layout import RunLayout
from torchtop.trials.measure import Measurement, measure
from torchtop.trials.trial import TrialSettings, measured, predicted_gain, run_trial
from torchtop.tuning.budget import BudgetPlan, TrialSize, job_costs, plan_trial
from torchtop.tuning.profiled import profiled_run

EventSink = Callable[[str], None]

DEFAULT_BUDGET_S = 300.0
INTERRUPTED = "interrupted (Ctrl-C or SIGTERM); the trial then running is not kept"
PLANNED_ROUNDS = 3
"""Rounds a trial is sized for: at 99%, two rounds' interval (Student's t on 1 degree of freedom,
63.7) keeps a fix only where both ratios agree within about 7%; the slow-start job's 26.5x and
30.7x read 0.26->999x, inconclusive, where a third round decides a large gain at any usual
spread."""
PROFILED_FOLDER = "profiled"
"""Under RUN: the run profiled early when the baseline ended before its window."""
NO_UNTRIED = "no untried fix applies"


@dataclass(frozen=True)
class TuneOptions:
    budget_s: float = DEFAULT_BUDGET_S
    """`--for`: no trial starts that would end past it (the baseline counts too)."""
    steps: int = 20
    warmup_steps: int = 8
    min_gain: float = 0.05
    """A fix is kept only when it makes the job at least this much faster."""
    max_trials: int = 8
    allow: frozenset[str] = frozenset()
    """Convergence groups the user allows (`batch-size`, `precision`, `learning-rate`)."""
    bindings: Mapping[str, str] = field(default_factory=dict)
    """knob -> command-line flag, from `torchtop.toml` [bind]."""
    run_timeout_s: float = 120.0
    max_rounds: int = TrialSettings.max_rounds
    """A trial measures rounds (a run of each variant) until it can decide, up to this many."""
    min_duration_s: float = TrialSettings.min_duration_s
    """Every measured run (baseline and trials) measures at least this long (and `steps` steps)."""
    capture_output: bool = True

    def trial_settings(self) -> TrialSettings:
        """How each trial decides (`run_trial`'s settings), from these options."""
        return TrialSettings(
            min_gain=self.min_gain,
            max_rounds=self.max_rounds,
            min_duration_s=self.min_duration_s,
            capture_output=self.capture_output,
        )


@dataclass(frozen=True)
class TuneResult:
    run_dir: Path
    original: LaunchPlan
    final: LaunchPlan
    trials: tuple[Trial, ...]
    skipped: tuple[NotApplicable, ...]
    """Fixes the diagnoses named that tune could not apply (code changes, not allowed, ...)."""
    baseline: Measurement
    report: Report | None
    """The diagnosis of the job as it runs in the end."""
    stopped_because: str
    interrupted: LaunchPlan | None = None
    """The plan whose trial was running when tuning was interrupted (not kept)."""

    @property
    def kept(self) -> tuple[Trial, ...]:
        return tuple(t for t in self.trials if t.kept)

    @property
    def final_steps_per_s(self) -> float:
        kept = self.kept
        latest = kept[-1].trial_steps_per_s if kept else None
        return latest if latest is not None else self.baseline.steps_per_s


@dataclass
class _Progress:
    """What the loop knows between trials."""

    plan: LaunchPlan
    current: Measurement
    """The newest profiled run of `plan` (diagnosed for the next fix)."""
    fresh: Measurement | None
    """A measurement of `plan` usable as the next trial's baseline (taken just now)."""
    trials: list[Trial] = field(default_factory=list)
    tried: set[tuple[str, str]] = field(default_factory=set)
    skipped: dict[str, NotApplicable] = field(default_factory=dict)
    run_durations_s: list[float] = field(default_factory=list)


def tune(
    command: Sequence[str],
    options: TuneOptions,
    tree: RuleTree,
    run_dir: Path,
    env: Mapping[str, str] | None = None,
    cwd: str | None = None,
    machine: Machine | None = None,
    on_event: EventSink | None = None,
) -> TuneResult:
    say = on_event or (lambda _: None)
    started = time.monotonic()
    machine = machine or this_machine()
    original = initial_plan(command, os.environ if env is None else env, cwd or os.getcwd())
    say(
        f"baseline: the job as given (a warm-up of at least {options.warmup_steps} steps, then "
        f"{options.steps} steps and {options.min_duration_s:g} s)"
    )
    baseline = _measure(original, RunLayout(run_dir).baseline_dir, options)
    say(f"baseline: {baseline.steps_per_s:.2f} steps/s ({baseline.median_step_ms:.1f} ms median)")
    progress = _Progress(original, baseline, baseline)
    progress.run_durations_s.append(time.monotonic() - started)
    report: Report | None = None
    trying: LaunchPlan | None = None
    try:
        report = _diagnosed(original, baseline, run_dir, options, tree, say)
        while True:
            stopped = _stop_reason(progress, options)
            if stopped:  # before the fixes were looked at: the user's own changes still show
                _note_unapplied(report, progress, options, machine)
                break
            candidate = next_fix(report, progress, options, machine)
            if candidate is None:
                stopped = _undecided(report, progress.trials, options)
                break
            budget = _budget(progress, options, time.monotonic() - started)
            if budget.size is None:  # said before any of the budget is spent on it
                stopped = budget.too_short(_named(candidate), options.budget_s)
                say(f"no trial: {stopped}")
                _note_unapplied(report, progress, options, machine)
                break
            say(format_plan(progress.plan, candidate).rstrip())
            say(budget.size.said(options.steps))
            gain = predicted_gain(report, candidate.fixes[-1].knob)
            deadline_s = started + options.budget_s
            trying = candidate
            trial = _trial(
                progress, candidate, options, run_dir, say, gain, deadline_s, budget.size
            )
            trying, progress.fresh = None, None
            if trial.kept:
                progress.plan, progress.current = candidate, measured(trial.after[0])
                progress.fresh = measured(trial.after[-1])
                report = None  # until the kept fix's run is diagnosed
                report = analyze_run(progress.current.run_dir, tree)
    except KeyboardInterrupt:
        # Each run's job was stopped on the way out (`measure`); what was decided stands.
        stopped = INTERRUPTED
        say(INTERRUPTED)
    return TuneResult(
        run_dir=run_dir,
        original=original,
        final=progress.plan,
        trials=tuple(progress.trials),
        skipped=tuple(progress.skipped.values()),
        baseline=baseline,
        report=report,
        stopped_because=stopped,
        interrupted=trying,
    )


def _diagnosed(
    plan: LaunchPlan,
    baseline: Measurement,
    run_dir: Path,
    options: TuneOptions,
    tree: RuleTree,
    say: EventSink,
) -> Report | None:
    """The baseline's diagnosis; for a job that ended before its profiler window, that of a
    run profiled from the end of its warm-up (`tuning.profiled`), said as such."""
    if baseline.has_window:
        return analyze_run(baseline.run_dir, tree)
    first = baseline.warmup_steps
    say(
        "the baseline gave no profiler window (asked for after the measured steps: the job "
        f"ended, or none came in time): profiling another run from step {first}, its stacks "
        "sampled"
    )
    folder = run_dir / PROFILED_FOLDER
    if profiled_run(plan, folder, first, options.run_timeout_s, options.capture_output):
        return analyze_run(folder, tree)
    say(f"that run ended before its window too (see {folder})")
    return analyze_run(baseline.run_dir, tree)


def _nothing_left(report: Report | None, options: TuneOptions) -> str:
    if report is None:
        return "no process of the job reported steps to diagnose"
    if not report.job.infos and report.verdict.bottleneck != "dataloader":
        return (
            "the job ended before a profiler window could be taken, so only its step time and "
            "DataLoader wait were measured; give it more steps (it ran "
            f"{report.job.metrics.get('steps_count') or 0} counted) to diagnose the rest"
        )
    findings = report.verdict.findings
    if not findings:
        return f"the diagnosis names nothing to fix ({report.verdict.reason})"
    if not any(finding.fixes for finding in findings):
        # A 2-rank nanoGPT: all-reduce not overlapped, but 0.4 MB of gradients fill one bucket
        # at any size, so the bucket advice does not fire; saying "no untried fix applies"
        # there read as if fixes had been tried.
        named = ", ".join(finding.rule for finding in findings)
        return f"the diagnosis ({named}) offers no fix for this job"
    return f"{NO_UNTRIED} (a kept fix must gain at least {options.min_gain:.0%})"


def _undecided(report: Report | None, trials: Sequence[Trial], options: TuneOptions) -> str:
    """Why tune stopped with no fix left to try; after an inconclusive trial that first, as
    it was: `trial 1 (dataloader.num_workers 0 -> 13) was inconclusive: measured 3.18x (99%
    ...), neither the 5% gain a kept fix needs nor its absence shown; reverted; about 1 more
    round ... would decide it; no other fix is left to try`. It once began "no untried fix
    applies (a kept fix must gain at least 5%)", which read as if the fix was measured without
    that gain."""
    left = _nothing_left(report, options)
    said = [_inconclusive(t, options) for t in trials if t.effect == INCONCLUSIVE]
    if not said:
        return left
    rest = "no other fix is left to try" if left.startswith(NO_UNTRIED) else left
    return "; ".join([*said, rest])


def _inconclusive(trial: Trial, options: TuneOptions) -> str:
    changes = "; ".join(trial.plan_after.changes) or trial.plan_after.description
    said = (
        f"trial {trial.number} ({changes}) was inconclusive: "
        f"{estimate_claim(trial.speedup, trial.estimate)}, which shows neither the "
        f"{options.min_gain:.0%} gain a kept fix needs nor its absence; reverted"
    )
    return said + (f"; {trial.decides_with}" if trial.decides_with else "")


def _stop_reason(progress: _Progress, options: TuneOptions) -> str | None:
    if len(progress.trials) >= options.max_trials:
        return f"reached the limit of {options.max_trials} trials"
    return None


def _budget(progress: _Progress, options: TuneOptions, elapsed_s: float) -> BudgetPlan:
    """The next trial sized to the time left, from the job as it runs now (`tuning.budget`)."""
    # The runs a trial decides on: `PLANNED_ROUNDS` of each variant (a fresh baseline is one).
    runs = 2 * PLANNED_ROUNDS - (1 if progress.fresh is not None else 0)
    full = options.trial_settings().span(options.steps, options.warmup_steps)
    costs = job_costs(progress.current, max(progress.run_durations_s))
    return plan_trial(costs, elapsed_s, options.budget_s, full, runs)


def _named(plan: LaunchPlan) -> str:
    return "; ".join(plan.changes) or plan.description


def next_fix(
    report: Report | None, progress: _Progress, options: TuneOptions, machine: Machine
) -> LaunchPlan | None:
    """The plan for the first applicable, untried fix of the diagnosis, in its order."""
    if report is None:
        return None
    for fix in _fixes(report):
        planned = _planned(fix, report, progress, options, machine)
        if isinstance(planned, NotApplicable):
            progress.skipped.setdefault(fix.knob, planned)
            continue
        newest = planned.fixes[-1]
        key = (newest.knob, str(newest.value))
        if key not in progress.tried:
            progress.tried.add(key)
            return planned
    return None


def _note_unapplied(
    report: Report | None, progress: _Progress, options: TuneOptions, machine: Machine
) -> None:
    """Every fix of the last diagnosis that tune cannot apply (code changes, groups not
    allowed), in `progress.skipped`, as `next_fix` records them, where tuning stopped before
    it looked (the budget, the trials' limit): the summary shows the user's own changes
    whatever stopped it."""
    if report is None:
        return
    for fix in _fixes(report):
        planned = _planned(fix, report, progress, options, machine)
        if isinstance(planned, NotApplicable):
            progress.skipped.setdefault(fix.knob, planned)


def _planned(
    fix: Fix, report: Report, progress: _Progress, options: TuneOptions, machine: Machine
) -> LaunchPlan | NotApplicable:
    return plan_fix(
        fix,
        progress.plan,
        progress.current.settings,
        machine,
        bindings=options.bindings,
        allow=options.allow,
        metrics=report.job.metrics,
        argv=progress.current.argv,
    )


def _fixes(report: Report) -> list[Fix]:
    seen: list[Fix] = []
    for finding in report.verdict.findings:
        seen.extend(f for f in finding.fixes if f not in seen)
    return seen


def _trial(
    progress: _Progress,
    candidate: LaunchPlan,
    options: TuneOptions,
    run_dir: Path,
    say: EventSink,
    gain: float | None = None,
    deadline_s: float | None = None,
    size: TrialSize | None = None,
) -> Trial:
    settings = options.trial_settings()
    steps, warmup_steps, window_after = options.steps, options.warmup_steps, True
    if size is not None:
        steps, warmup_steps, window_after = size.steps, size.warmup_steps, size.window_after
        settings = replace(
            settings, min_duration_s=size.min_duration_s, max_warmup_s=size.max_warmup_s
        )
    trial = run_trial(
        progress.plan,
        candidate,
        steps,
        warmup_steps,
        run_dir,
        options.run_timeout_s,
        before=progress.fresh,
        settings=settings,
        window_after=window_after,
        on_event=lambda event: say(event.text),
        predicted_gain=gain,
        deadline_s=deadline_s,
        before_run_s=size.run_s if size is not None else None,
    )
    progress.trials.append(trial)
    runs = len(trial.before) + len(trial.after) - (1 if progress.fresh is not None else 0)
    progress.run_durations_s.append(trial.duration_s / max(runs, 1))
    return trial


def _measure(plan: LaunchPlan, run_dir: Path, options: TuneOptions) -> Measurement:
    span = options.trial_settings().span(options.steps, options.warmup_steps)
    return measure(
        plan,
        run_dir,
        span,
        options.run_timeout_s,
        window=True,
        capture_output=options.capture_output,
    )
