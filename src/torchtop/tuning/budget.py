"""How big a trial `tune --for` can afford: its runs sized in steps to fit the time left.

A trial's run costs the job's start-up (imports, data set-up, DataLoader workers), its warm-up,
its measured steps and its stop; the first run with the fix also takes the profiler windows that
diagnose the next fix. On a job with seconds-long steps and a long start-up a fixed size does not
fit: nanoGPT's `tune --for 300` measured a 91 s baseline, then stopped with 210 s unused because
"another trial would overrun", and never said what budget would have tried the fix `run` offers.

So the trial is sized from the job's own baseline (`trials.measure.RunCost`: start-up, stop,
its windows; the steady step time): the runs a trial decides on (`tune.PLANNED_ROUNDS` of each
variant, less the fresh baseline it reuses) at the full size (`TuneOptions.steps`,
`warmup_steps`, `min_duration_s`, the windows) if they fit the time left; else without the
windows (a fix kept by this trial would have no budget for another anyway), with fewer steps,
down to `MIN_STEPS` measured after `MIN_WARMUP_STEPS` of warm-up (its time cap and least
measured time shortened alike); else not at all, said before
any of the budget is spent on it, with the `--for` that would fit one trial of the smallest size.
Pure: numbers in, a plan out; estimates (the fix's runs are costed at the job's step time as it
runs now, which a fix that helps only shortens).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from torchtop.model.trials import Span
from torchtop.trials.measure import Measurement

MIN_STEPS = 5
"""The fewest measured steps a trial's run is sized down to: a round's ratio is the evidence,
the spread between rounds its noise, so a short run is noisier, not wrong."""
MIN_WARMUP_STEPS = 2
MARGIN = 1.2
"""A trial's runs are planned this much longer than the job's own runs predict: a fix's runs
can start slower (the slow-start job's run with 64 DataLoader workers took 60 s where its
own runs took 47 s, and the trial, planned without a margin, had no time for its second
round)."""


@dataclass(frozen=True)
class JobCosts:
    """What one launch of the job costs, from a measured run of it."""

    startup_s: float
    stop_s: float
    step_s: float
    """The steady step time (the median)."""
    window_s: float
    """What a run's profiler windows add (their steps, dumps, stack sampling)."""


@dataclass(frozen=True)
class TrialSize:
    steps: int
    warmup_steps: int
    min_duration_s: float
    max_warmup_s: float
    window_after: bool
    runs: int
    run_s: float
    """One run without windows, estimated."""
    trial_s: float
    """The fewest runs the trial decides on, windows included, estimated with `MARGIN`."""

    def said(self, asked_steps: int) -> str:
        """`the trial's runs: 7 measured steps after a warm-up of at least 2, sized to the
        time left (asked: 20 steps); about 150 s for the 3 runs it decides on`."""
        full = self.steps == asked_steps and self.window_after
        sized = "" if full else f", sized to the time left (asked: {asked_steps} steps)"
        return (
            f"the trial's runs: {self.steps} measured steps after a warm-up of at least "
            f"{self.warmup_steps}{sized}; about {self.trial_s:.0f} s for the {self.runs} "
            "runs it decides on"
        )


@dataclass(frozen=True)
class BudgetPlan:
    size: TrialSize | None
    """None: not even the smallest trial fits in the time left."""
    left_s: float
    smallest: TrialSize
    needed_budget_s: float
    """The `--for` that would fit one trial of the smallest size, counted from tune's start."""

    def too_short(self, fix: str, budget_s: float) -> str:
        """Why no trial starts: `another trial would overrun the time budget of 300 s: one
        trial of <fix> needs about 150 s (3 runs of about 50 s, ...), and 120 s are left:
        --for 330 would try it`."""
        smallest = self.smallest
        return (
            f"another trial would overrun the time budget of {budget_s:g} s: "
            f"one trial of {fix} needs about {smallest.trial_s:.0f} s ({smallest.runs} runs "
            f"of about {smallest.run_s:.0f} s, each of {smallest.steps} measured steps after "
            f"a warm-up of {smallest.warmup_steps}, and {MARGIN - 1:.0%} more: a fix's runs can "
            f"start slower), and {max(self.left_s, 0.0):.0f} s are left: "
            f"--for {self.needed_budget_s:.0f} would try it"
        )


def job_costs(run: Measurement, run_s: float) -> JobCosts:
    """What a launch of the job costs, from a measured run of it (`run_s`: how long the run
    took, for a run whose first steps were not kept: all of it beyond its steps is start-up)."""
    step_s = run.median_step_ms / 1000.0
    measured_s = run.duration_s + (run.warmup.duration_s if run.warmup is not None else 0.0)
    cost = run.cost
    if cost is None:
        return JobCosts(max(run_s - measured_s, 0.0), 0.0, step_s, 0.0)
    window_s = max(cost.total_s - cost.startup_s - cost.stop_s - measured_s, 0.0)
    return JobCosts(cost.startup_s, cost.stop_s, step_s, window_s if run.has_window else 0.0)


def plan_trial(
    costs: JobCosts,
    elapsed_s: float,
    budget_s: float,
    full: Span,
    runs: int,
) -> BudgetPlan:
    """The largest trial of `runs` runs (`full` at most) that fits in `budget_s - elapsed_s`."""
    left_s = budget_s - elapsed_s
    sizes = [_size(costs, full, steps, runs, True) for steps in (full.steps,)]
    sizes += [_size(costs, full, steps, runs, False) for steps in _down_from(full.steps)]
    smallest = sizes[-1]
    fitting = next((size for size in sizes if size.trial_s <= left_s), None)
    needed = math.ceil((elapsed_s + smallest.trial_s) / 10.0) * 10.0
    return BudgetPlan(fitting, left_s, smallest, needed)


def _down_from(steps: int) -> list[int]:
    """`steps`, and each fewer down to `MIN_STEPS` (none fewer than asked for is below it)."""
    return list(range(steps, min(steps, MIN_STEPS) - 1, -1))


def _size(costs: JobCosts, full: Span, steps: int, runs: int, window: bool) -> TrialSize:
    share = steps / full.steps if full.steps > 0 else 1.0
    warmup = full.warmup_steps if steps >= full.steps else round(full.warmup_steps * share)
    warmup = max(min(warmup, full.warmup_steps), MIN_WARMUP_STEPS)
    share = min(share, 1.0)
    sized = replace(full, min_duration_s=full.min_duration_s * share)
    sized = replace(sized, max_warmup_s=full.max_warmup_s * share)
    warm_s = warmup_s(costs.step_s, warmup, sized)
    measured_s = max(steps * costs.step_s, sized.min_duration_s)
    run_s = costs.startup_s + warm_s + measured_s + costs.stop_s
    trial_s = (runs * run_s + (costs.window_s if window else 0.0)) * MARGIN
    return TrialSize(
        steps, warmup, sized.min_duration_s, sized.max_warmup_s, window, runs, run_s, trial_s
    )


def warmup_s(step_s: float, warmup_steps: int, span: Span) -> float:
    """The warm-up `trials.warmup.end_of_warmup` gives a steady job: past `warmup_steps`, until
    two stationary windows of `settle_steps` or `max_warmup_s`, whichever comes first."""
    floor_s = warmup_steps * step_s
    if step_s <= 0:
        return 0.0
    time_cap_s = math.ceil(span.max_warmup_s / step_s) * step_s
    stationary_s = max(warmup_steps, 2 * span.settle_steps) * step_s
    return max(floor_s, min(time_cap_s, stationary_s))
