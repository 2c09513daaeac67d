"""The A/B trial: the job as it runs now, then with one fix, measured in rounds; keep or revert.

Both variants are measured alike, as separate launches into `RUN/trials/NN/{before,after}-K/`,
one right after the other so both see the same machine: each run's warm-up ends by the same rule
(`trials.warmup`: past the batches its DataLoader queued, then once step times are stationary;
recorded in the run's entry), and each measures at least `steps` steps and at least
`min_duration_s` of them, so a fast variant is measured over time as well as over steps.
On a shared machine the load changes from one run to the next, and some jobs switch
between a slow and a fast rhythm from one launch to the next (a DataLoader whose workers fight
the training threads for cores): two identical variants measured a minute apart have differed
here by 25%, and by 7x. So the unit of evidence is a run: round K is one run of each variant,
adjacent in time, in alternating order (before, after; after, before; before, after; ...: ABBA,
so a steady drift of the machine cancels), and yields one ratio, after rate over before rate.
`trials.decision` decides from the ratios (their geometric mean and its t interval over the
rounds), adding rounds up to `max_rounds` while the interval cannot decide, or until `deadline_s`
leaves no time for another; the progress says each round, its interval and the time left.
Each trial is written to `RUN/trials/NN.json`; `trial_entry(trial)` is the report's `trials`
entry (CONTRACT.md; a typed `model.trial_entry.TrialEntry`), with the rounds' ratios, the
interval and the `predicted_gain` of its fix (the bound its finding put on the gain) beside the
measured `speedup`. The trial's progress goes out as typed events (`model.trials.Measured`,
`Stage` between rounds), and its caller ends it through a `trials.handle.TrialHandle`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from torchtop.advice.show import env_changes, format_overrides
from torchtop.model.plan import LaunchPlan
from torchtop.model.report import Report
from torchtop.model.rounds import (
    RoundsEstimate,
    favouring_text,
    interval_text,
)
from torchtop.model.trial_entry import IntervalEntry, TrialEntry, TrialRuns, entry_json
from torchtop.model.trials import (
    Decided,
    Measured,
    MeasuredRun,
    Stage,
    Trial,
    TrialEvent,
    walls_of,
)
from torchtop.runs.journal import write_once
from torchtop.runs.layout import RunLayout
from torchtop.trials.decision import Decision, TrialSettings, decide, rounds_text
from torchtop.trials.handle import TrialCancelled, TrialHandle
from torchtop.trials.load import load_change
from torchtop.trials.measure import MeasureError, Measurement, measure
from torchtop.trials.stats import estimate_rounds

__all__ = ["TrialSettings", "measured", "predicted_gain", "run_trial", "trial_entry"]

EventSink = Callable[[TrialEvent], None]


def trial_entry(trial: Trial, with_steps: bool = True) -> TrialEntry:
    """The report's `trials` entry; `with_steps` adds every measured step's wall time."""
    speedup, after_rate = trial.speedup, trial.trial_steps_per_s
    before, after = trial.plan_before, trial.plan_after
    estimate = trial.estimate
    return TrialEntry(
        fixes=tuple(f.entry() for f in trial.fixes),
        baseline_steps_per_s=round(trial.baseline_steps_per_s, 4) if trial.before else None,
        trial_steps_per_s=_rounded(after_rate),
        speedup=_rounded(speedup),
        predicted_gain=_rounded(trial.predicted_gain),
        kept=trial.kept,
        number=trial.number,
        reason=trial.reason,
        p_value=trial.p_value,
        rounds=estimate.rounds if estimate is not None else 0,
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
        effect=trial.effect,
        round_ratios=tuple(round(r, 4) for r in estimate.ratios) if estimate else (),
        speedup_low=_rounded(estimate.low if estimate else None),
        speedup_high=_rounded(estimate.high if estimate else None),
        confidence=estimate.confidence if estimate and estimate.low is not None else None,
        cancelled=trial.cancelled,
        outcome=trial.outcome,
        interval=_interval(estimate),
        rounds_favouring=estimate.favouring if estimate is not None else None,
        more_rounds=trial.more_rounds,
        decides_with=trial.decides_with,
        load_change=trial.load_change,
    )


def _interval(estimate: RoundsEstimate | None) -> IntervalEntry | None:
    if estimate is None or estimate.low is None or estimate.high is None:
        return None
    text = interval_text(estimate.low, estimate.high, estimate.confidence)
    return IntervalEntry(round(estimate.low, 4), round(estimate.high, 4), estimate.confidence, text)


@dataclass
class _Rounds:
    """The runs measured so far, paired by round (`before[k]` with `after[k]`)."""

    befores: list[Measurement] = field(default_factory=list)
    afters: list[Measurement] = field(default_factory=list)
    run_s: dict[str, list[float]] = field(default_factory=lambda: {"before": [], "after": []})
    """How long each run launched here took, start to stop, by variant."""
    before_run_s: float | None = None
    """What a run of the job as it runs now is expected to take where none was launched here
    (the first "before" is `tune`'s fresh baseline): its planned size (`tuning.budget`)."""

    @property
    def ratios(self) -> list[float]:
        pairs = zip(self.befores, self.afters, strict=False)
        return [a.steps_per_s / b.steps_per_s for b, a in pairs if b.steps_per_s > 0]

    def round_s(self) -> float:
        """The expected time of another round: a run of each variant as long as those so far
        (a fix's runs can start slower: 64 DataLoader workers to spawn took 60 s a run where
        the job's own took 47 s)."""
        before, after = self.run_s["before"], self.run_s["after"]
        before_s = _mean(before) if before else self.before_run_s
        after_s = _mean(after) if after else None
        known = [s for s in (before_s, after_s) if s is not None]
        return sum(known) * (2 / len(known)) if known else 0.0

    def load_change(self) -> str | None:
        """How the machine's other load moved under the runs, in the order measured."""
        runs: list[tuple[int, float | None]] = []
        for k, (before, after) in enumerate(zip(self.befores, self.afters, strict=False), 1):
            first, second = (after, before) if k % 2 == 0 else (before, after)
            runs += [(k, first.other_cores), (k, second.other_cores)]
        return load_change(runs)


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
    deadline_s: float | None = None,
    before_run_s: float | None = None,
) -> Trial:
    """Measure both plans in rounds, decide, and write `run_root/trials/NN.json`. Each measured
    run is said as a `Measured` event, an undecided round as a `Stage`, the decision as
    `Decided`; the run being measured is registered on `handle`, and once the handle is
    cancelled the trial ends with `TrialCancelled` carrying the trial as far as it got, also
    written to `NN-cancelled.json`. `deadline_s`
    (`time.monotonic()`): no round is started that would end past it; `before_run_s`: what a
    run of `plan_before` is expected to take until one is launched here."""
    settings = settings or TrialSettings()
    say = on_event or (lambda _: None)
    handle = handle or TrialHandle()
    number = next_trial_number(run_root)
    folder = RunLayout(run_root).trial_dir(number)
    started = time.monotonic()
    same = settings.span(steps, warmup_steps)
    rounds = _Rounds(before_run_s=before_run_s)

    def run(plan: LaunchPlan, label: str, window: bool = False) -> Measurement:
        handle.check()
        launched = time.monotonic()
        try:
            result = measure(
                plan, folder / label, same, timeout_s, window, settings.capture_output, handle
            )
        except MeasureError:
            handle.check()  # a run cut short by the cancel is no failed run
            raise
        handle.check()
        rounds.run_s["after" if label.startswith("after") else "before"].append(
            time.monotonic() - launched
        )
        say(Measured(number, label, result.steps_per_s, result.other_cores))
        return result

    if before is not None and not _long_enough(before, steps, settings.min_duration_s):
        before = None

    def made(decision: Decision | None, failed: str | None, cancelled: bool = False) -> Trial:
        estimate = decision.estimate if decision is not None else _estimate(rounds, settings)
        reason = failed or (decision.reason if decision is not None else "not decided")
        return Trial(
            number=number,
            fixes=plan_after.fixes[len(plan_before.fixes) :],
            kept=decision is not None and decision.kept,
            reason=reason,
            before=tuple(rounds.befores),
            after=tuple(rounds.afters),
            p_value=estimate.p_value if estimate is not None else None,
            plan_before=plan_before,
            plan_after=plan_after,
            duration_s=time.monotonic() - started,
            measured_as=same,
            predicted_gain=predicted_gain,
            estimate=estimate,
            effect=decision.effect if decision is not None else None,
            cancelled=cancelled,
            more_rounds=decision.more_rounds if decision is not None else None,
            decides_with=decision.decides_with if decision is not None else None,
            load_change=rounds.load_change(),
        )

    decision: Decision | None = None
    failed: str | None = None
    try:
        rounds.befores.append(before or run(plan_before, "before-1"))  # a failure: no trial
        try:
            rounds.afters.append(run(plan_after, "after-1", window_after))
            while (decision := _decide(rounds, settings, deadline_s, number, say)) is None:
                k = len(rounds.afters) + 1
                first, second = ("after", "before") if k % 2 == 0 else ("before", "after")
                for variant in (first, second):
                    plan = plan_after if variant == "after" else plan_before
                    runs = rounds.afters if variant == "after" else rounds.befores
                    runs.append(run(plan, f"{variant}-{k}"))
        except MeasureError as exc:
            failed = f"a run failed, so the fix is reverted: {exc}"
    except TrialCancelled as cancel:
        cancelled = _cancelled(made(None, _cancel_reason(rounds), True), run_root)
        raise TrialCancelled(cancelled) from cancel
    trial = made(decision, failed)
    write_once(RunLayout(run_root).trial_json(number), entry_json(trial_entry(trial)))
    say(Decided(number, trial.kept, trial.reason))
    return trial


def _cancel_reason(rounds: _Rounds) -> str:
    count = len(rounds.befores) + len(rounds.afters)
    return f"cancelled by the user after {count} measured run{'s' if count != 1 else ''}"


def _cancelled(trial: Trial, run_root: Path) -> Trial:
    """Record `trial`, cancelled, in `RUN/trials/NN-cancelled.json`; return it."""
    path = RunLayout(run_root).cancelled_trial_json(trial.number)
    write_once(path, entry_json(trial_entry(trial)))
    return trial


def measured(run: MeasuredRun) -> Measurement:
    """A run of a trial that `run_trial` measured: a `Measurement`, with the agent's records."""
    if not isinstance(run, Measurement):
        raise TypeError(f"{run.run_dir}: not a run that run_trial measured")
    return run


def _decide(
    rounds: _Rounds,
    settings: TrialSettings,
    deadline_s: float | None,
    number: int,
    say: EventSink,
) -> Decision | None:
    """The decision on the rounds so far, or None (said as a `Stage`) to measure another."""
    done = len(rounds.afters)
    round_s = rounds.round_s()
    out_of_time = deadline_s is not None and time.monotonic() + round_s > deadline_s
    final = done >= settings.max_rounds or out_of_time
    by_budget = out_of_time and done < settings.max_rounds
    decision = decide(rounds.ratios, settings, final, round_s, by_budget)
    if decision is None:
        left = settings.max_rounds - done
        estimate = estimate_rounds(rounds.ratios, settings.confidence)
        said = rounds_text(estimate)
        favoured = favouring_text(estimate.favouring, estimate.rounds)
        say(
            Stage(
                f"trial {number} round {done}: {said}: undecided ({favoured}); another round "
                f"(at most {left} more, about {round_s:.0f} s each)"
            )
        )
    return decision


def _estimate(rounds: _Rounds, settings: TrialSettings) -> RoundsEstimate | None:
    """What the rounds completed before a run failed measured (None: not one round)."""
    ratios = rounds.ratios
    return estimate_rounds(ratios, settings.confidence) if ratios else None


def _long_enough(measurement: Measurement, steps: int, min_duration_s: float) -> bool:
    return len(measurement.step_wall_s) >= steps and measurement.duration_s >= min_duration_s


def predicted_gain(report: Report | None, knob: str) -> float | None:
    """The predicted gain of the first finding that offers a fix to `knob` (None: none says)."""
    for finding in report.verdict.findings if report is not None else ():
        if any(fix.knob == knob for fix in finding.fixes):
            return finding.predicted_gain
    return None


def _mean(values: list[float]) -> float:
    return sum(values) / len(values)


def _rounded(value: float | None) -> float | None:
    return round(value, 4) if value is not None else None


def next_trial_number(run_root: Path) -> int:
    folder = RunLayout(run_root).trials_dir
    # A cancelled trial's `NN-cancelled.json` takes its number too.
    stems = [p.stem.removesuffix("-cancelled") for p in folder.glob("*.json")]
    taken = [int(stem) for stem in stems if stem.isdigit()]
    return max(taken, default=0) + 1


def _median_ms(measurements: tuple[MeasuredRun, ...]) -> float | None:
    walls = sorted(walls_of(measurements))
    if not walls:
        return None
    middle = len(walls) // 2
    median = walls[middle] if len(walls) % 2 else (walls[middle - 1] + walls[middle]) / 2
    return round(median * 1000.0, 3)
