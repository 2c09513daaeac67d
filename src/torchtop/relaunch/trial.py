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
Each trial is written to `RUN/trials/NN.json`; its `as_json()` is the report's `trials` entry
(CONTRACT.md), with the evidence added, and the `predicted_gain` of its fix (the bound its
finding put on the gain) beside the measured `speedup`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from torchtop.advice.show import env_changes, format_overrides
from torchtop.model.plan import AppliedFix, LaunchPlan
from torchtop.model.report import Report
from torchtop.relaunch.measure import MeasureError, Measurement, measure
from torchtop.relaunch.stats import compare, steps_per_s
from torchtop.relaunch.warmup import Span
from torchtop.runs.journal import write_once
from torchtop.runs.layout import RunLayout

EventSink = Callable[[str], None]


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


@dataclass(frozen=True)
class Trial:
    number: int
    fixes: tuple[AppliedFix, ...]
    kept: bool
    reason: str
    before: tuple[Measurement, ...]
    after: tuple[Measurement, ...]
    p_value: float | None
    plan_before: LaunchPlan
    plan_after: LaunchPlan
    duration_s: float
    extra: dict[str, Any] = field(default_factory=dict)
    predicted_gain: float | None = None
    """The speedup bound its fix's finding predicted (None: not predicted)."""

    @property
    def baseline_steps_per_s(self) -> float:
        return _pooled_rate(self.before)

    @property
    def trial_steps_per_s(self) -> float | None:
        return _pooled_rate(self.after) if self.after else None

    @property
    def speedup(self) -> float | None:
        after = self.trial_steps_per_s
        return after / self.baseline_steps_per_s if after is not None else None

    def as_json(self, with_steps: bool = True) -> dict[str, Any]:
        """The report's `trials` entry; `with_steps` adds every measured step's wall time."""
        speedup, after_rate = self.speedup, self.trial_steps_per_s
        return {
            "fixes": [f.as_json() for f in self.fixes],
            "baseline_steps_per_s": round(self.baseline_steps_per_s, 4),
            "trial_steps_per_s": round(after_rate, 4) if after_rate is not None else None,
            "speedup": round(speedup, 4) if speedup is not None else None,
            "predicted_gain": _rounded(self.predicted_gain),
            "kept": self.kept,
            "number": self.number,
            "reason": self.reason,
            "p_value": self.p_value,
            "rounds": len(self.after),
            "baseline_median_step_ms": _median_ms(self.before),
            "trial_median_step_ms": _median_ms(self.after),
            "changes": list(self.plan_after.changes),
            "command_before": list(self.plan_before.command),
            "command_after": list(self.plan_after.command),
            "env_changes": env_changes(self.plan_before.env, self.plan_after.env),
            "overrides": format_overrides(self.plan_after.overrides),
            "runs": {
                "before": [m.summary(with_steps) for m in self.before],
                "after": [m.summary(with_steps) for m in self.after],
            },
            "duration_s": round(self.duration_s, 2),
            **self.extra,
        }


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
) -> Trial:
    """Measure both plans, decide, and write `run_root/trials/NN.json`."""
    settings = settings or TrialSettings()
    say = on_event or (lambda _: None)
    number = next_trial_number(run_root)
    folder = RunLayout(run_root).trial_dir(number)
    started = time.monotonic()

    def run(plan: LaunchPlan, label: str, span: Span, window: bool = False) -> Measurement:
        result = measure(plan, folder / label, span, timeout_s, window, settings.capture_output)
        say(f"trial {number} {label}: {result.steps_per_s:.2f} steps/s")
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
        extra={"measured_as": asdict(same)},
        predicted_gain=predicted_gain,
    )
    write_once(RunLayout(run_root).trial_json(number), trial.as_json())
    return trial


def _decide(
    befores: list[Measurement], afters: list[Measurement], settings: TrialSettings, final: bool
) -> tuple[bool, str, float | None] | None:
    """(kept, reason, p) once decided; None to measure another round."""
    pooled = compare(_walls(befores), _walls(afters))
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


def _walls(measurements: list[Measurement]) -> list[float]:
    return [s for m in measurements for s in m.step_wall_s]


def _pooled_rate(measurements: tuple[Measurement, ...]) -> float:
    return steps_per_s(_walls(list(measurements))) or 0.0


def _median_ms(measurements: tuple[Measurement, ...]) -> float | None:
    walls = sorted(s for m in measurements for s in m.step_wall_s)
    if not walls:
        return None
    middle = len(walls) // 2
    median = walls[middle] if len(walls) % 2 else (walls[middle - 1] + walls[middle]) / 2
    return round(median * 1000.0, 3)
