"""The A/B trial: the job as it runs now, then with one fix, measured alike; keep or revert.

Both variants are measured alike, as separate launches into `RUN/trials/NN/{before,after}-K/`,
one right after the other so both see the same machine: each run's warm-up ends by the same rule
(`relaunch.warmup`: past the batches its DataLoader queued, then once step times are stationary;
recorded in the run's entry), and each measures at least `steps` steps and at least
`min_duration_s` of them, so a fast variant is measured over time as well as over steps.
On a shared machine the load changes from one run to the next, and some jobs switch
between a slow and a fast rhythm from one launch to the next (a DataLoader whose workers fight
the training threads for cores): a step-level test within one pair of runs cannot see that, and
two identical variants measured a minute apart have differed here by 25%, and by 7x, "beyond
noise". So a fix is never kept on one round: the pair is measured again in the opposite order
(after, then before), which also cancels a steady drift, and the fix is kept only when both
rounds pooled are faster beyond noise (Mann-Whitney, `alpha`) and each round on its own is
faster by at least `min_gain`. Only a fix that halves the speed is reverted after one round.
Each trial is written to `RUN/trials/NN.json`; `trial_entry(trial)` is the report's `trials`
entry (CONTRACT.md; a typed `model.trial_entry.TrialEntry`), with the evidence added, and the
`predicted_gain` of its fix (the bound its finding put on the gain) beside the measured
`speedup`. The trial's progress goes out as typed events (`model.trials.Measured`), and its
caller ends it through a `relaunch.handle.TrialHandle`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from torchtop.advice.show import env_changes, format_overrides
from torchtop.model.plan import LaunchPlan
from torchtop.model.report import Report
from torchtop.model.trial_entry import TrialEntry, TrialRuns, entry_json
from torchtop.model.trials import Decided, Measured, MeasuredRun, Span, Trial, TrialEvent, walls_of
from torchtop.relaunch.handle import TrialHandle
from torchtop.relaunch.measure import MeasureError, Measurement, measure
from torchtop.relaunch.stats import compare
from torchtop.runs.journal import write_once
from torchtop.runs.layout import RunLayout

EventSink = Callable[[TrialEvent], None]


@dataclass(frozen=True)
class TrialSettings:
    min_gain: float = 0.02
    """A kept fix is at least this much faster (0.05: 5%)."""
    alpha: float = 0.01
    """The rank test's level: how often step times of one distribution pass for different."""
    decisive_loss: float = 1.0
    """A first round this much slower (1.0: half the speed) is reverted without a second."""
    max_rounds: int = 2
    min_duration_s: float = 5.0
    """Every run (baseline and fix, every round) measures at least this long after its warm-up:
    at 40 steps/s, 20 steps are half a second, shorter than a DataLoader's burst cycle."""
    capture_output: bool = True

    def span(self, steps: int, warmup_steps: int) -> Span:
        """What each run of a trial measures: the same for both variants."""
        return Span(steps, warmup_steps, self.min_duration_s)


def trial_entry(trial: Trial, with_steps: bool = True) -> TrialEntry:
    """The report's `trials` entry; `with_steps` adds every measured step's wall time."""
    speedup, after_rate = trial.speedup, trial.trial_steps_per_s
    before, after = trial.plan_before, trial.plan_after
    return TrialEntry(
        fixes=tuple(f.entry() for f in trial.fixes),
        baseline_steps_per_s=round(trial.baseline_steps_per_s, 4),
        trial_steps_per_s=_rounded(after_rate),
        speedup=_rounded(speedup),
        predicted_gain=_rounded(trial.predicted_gain),
        kept=trial.kept,
        number=trial.number,
        reason=trial.reason,
        p_value=trial.p_value,
        rounds=len(trial.after),
        baseline_median_step_ms=_median_ms(trial.before),
        trial_median_step_ms=_median_ms(trial.after),
        changes=tuple(after.changes),
        command_before=tuple(before.command),
        command_after=tuple(after.command),
        env_changes=tuple(env_changes(before.env, after.env)),
        overrides=tuple(format_overrides(after.overrides)),
        runs=TrialRuns(
            before=tuple(m.entry(with_steps) for m in trial.before),
            after=tuple(m.entry(with_steps) for m in trial.after),
        ),
        duration_s=round(trial.duration_s, 2),
        measured_as=trial.measured_as.entry() if trial.measured_as is not None else None,
    )


def run_trial(
    plan_before: LaunchPlan,
    plan_after: LaunchPlan,
    steps: int,
    warmup_steps: int,
    run_root: Path,
    timeout_s: float,
    before: Measurement | None = None,
    settings: TrialSettings | None = None,
    window_after: bool = False,
    on_event: EventSink | None = None,
    predicted_gain: float | None = None,
    handle: TrialHandle | None = None,
) -> Trial:
    """Measure both plans, decide, and write `run_root/trials/NN.json`. Each measured run is
    said as a `Measured` event, the decision as `Decided`; the run being measured is registered
    on `handle`, and once the handle is cancelled the trial ends with `TrialCancelled`, writing
    nothing."""
    settings = settings or TrialSettings()
    say = on_event or (lambda _: None)
    handle = handle or TrialHandle()
    number = next_trial_number(run_root)
    folder = RunLayout(run_root).trial_dir(number)
    started = time.monotonic()

    def run(plan: LaunchPlan, label: str, span: Span, window: bool = False) -> Measurement:
        handle.check()
        try:
            result = measure(
                plan, folder / label, span, timeout_s, window, settings.capture_output, handle
            )
        except MeasureError:
            handle.check()  # a run cut short by the cancel is no failed run
            raise
        handle.check()
        say(Measured(number, label, result.steps_per_s))
        return result

    if before is not None and not _long_enough(before, steps, settings.min_duration_s):
        before = None
    same = settings.span(steps, warmup_steps)
    befores = [before or run(plan_before, "before-1", same)]
    afters: list[Measurement] = []
    decision: tuple[bool, str, float | None] | None = None
    try:
        afters.append(run(plan_after, "after-1", same, window_after))
        decision = _decide(befores, afters, settings, final=settings.max_rounds <= 1)
        while decision is None:
            k = len(afters) + 1
            afters.append(run(plan_after, f"after-{k}", same))
            befores.append(run(plan_before, f"before-{k}", same))
            decision = _decide(befores, afters, settings, final=k >= settings.max_rounds)
    except MeasureError as exc:
        decision = (False, f"a run failed, so the fix is reverted: {exc}", None)
    kept, reason, p_value = decision
    fixes = plan_after.fixes[len(plan_before.fixes) :]
    trial = Trial(
        number=number,
        fixes=fixes,
        kept=kept,
        reason=reason,
        before=tuple(befores),
        after=tuple(afters),
        p_value=p_value,
        plan_before=plan_before,
        plan_after=plan_after,
        duration_s=time.monotonic() - started,
        measured_as=same,
        predicted_gain=predicted_gain,
    )
    write_once(RunLayout(run_root).trial_json(number), entry_json(trial_entry(trial)))
    say(Decided(number, kept, reason))
    return trial


def measured(run: MeasuredRun) -> Measurement:
    """A run of a trial that `run_trial` measured: a `Measurement`, with the agent's records."""
    if not isinstance(run, Measurement):
        raise TypeError(f"{run.run_dir}: not a run that run_trial measured")
    return run


def _decide(
    befores: list[Measurement], afters: list[Measurement], settings: TrialSettings, final: bool
) -> tuple[bool, str, float | None] | None:
    """(kept, reason, p) once decided; None to measure another round."""
    pooled = compare(walls_of(befores), walls_of(afters))
    pairs = zip(befores, afters, strict=True)
    rounds = [compare(b.step_wall_s, a.step_wall_s).speedup for b, a in pairs]
    gain = f"{pooled.speedup:.2f}x (p={pooled.p_value:.2g}, {len(rounds)} round(s))"
    significant = pooled.p_value < settings.alpha
    if not final:
        if significant and pooled.speedup <= 1.0 / (1.0 + settings.decisive_loss):
            return False, f"slower beyond noise: {gain}; reverted", pooled.p_value
        return None
    margin = 1.0 + settings.min_gain
    if pooled.faster(settings.alpha, settings.min_gain) and all(r >= margin for r in rounds):
        return True, f"faster beyond noise: {gain}", pooled.p_value
    if pooled.slower(settings.alpha):
        why = "slower beyond noise"
    elif not significant:
        why = "no difference beyond noise"
    elif pooled.speedup >= margin:
        shown = ", ".join(f"{r:.2f}x" for r in rounds)
        why = f"not faster by {settings.min_gain:.0%} in every round ({shown})"
    else:
        why = f"gains less than the {settings.min_gain:.0%} a kept fix must"
    return False, f"{why}: {gain}; reverted", pooled.p_value


def _long_enough(measurement: Measurement, steps: int, min_duration_s: float) -> bool:
    return len(measurement.step_wall_s) >= steps and measurement.duration_s >= min_duration_s


def predicted_gain(report: Report | None, knob: str) -> float | None:
    """The predicted gain of the first finding that offers a fix to `knob` (None: none says)."""
    for finding in report.verdict.findings if report is not None else ():
        if any(fix.knob == knob for fix in finding.fixes):
            return finding.predicted_gain
    return None


def _rounded(value: float | None) -> float | None:
    return round(value, 4) if value is not None else None


def next_trial_number(run_root: Path) -> int:
    folder = RunLayout(run_root).trials_dir
    taken = [int(p.stem) for p in folder.glob("*.json") if p.stem.isdigit()]
    return max(taken, default=0) + 1


def _median_ms(measurements: tuple[MeasuredRun, ...]) -> float | None:
    walls = sorted(walls_of(measurements))
    if not walls:
        return None
    middle = len(walls) // 2
    median = walls[middle] if len(walls) % 2 else (walls[middle - 1] + walls[middle]) / 2
    return round(median * 1000.0, 3)
