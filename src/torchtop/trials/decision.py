"""Keep, revert, or measure another round: a trial's decision from its rounds' ratios.

One rule for `tune` and the dashboard's trial: both call `decide` through `trials.trial` with
the settings of `tuning.tune.TuneOptions.trial_settings` (the dashboard's `WatchedJob` holds the
same options). The evidence is the rounds (`trials.stats`: one paired ratio per round, the
spread between rounds as the noise), never the steps of one run. After each round from
`min_rounds` on, the interval of the geometric-mean speedup at `confidence` decides, with one of
four outcomes, each named as such on every surface:

- `faster` (kept): its lower bound above `1 + min_gain`, kept at once. (The trial used to
  measure on while the interval was wide, to state a tighter figure: the dashboard then said
  "not decided" at 6.43x, 99% interval 3.57-11.60x, and ran 6 rounds, 215 s, where `tune`, held
  by its budget, kept a like interval at once. The interval stated with the kept fix says how
  sure the figure is.)
- `slower` (reverted): its upper bound below 1, at once (a fix that halves the speed is
  reverted as soon as the interval says it is a loss, typically after three rounds; one round
  has no spread, so no single pair of runs reverts a fix, however slow it looked);
- `no measurable effect` (reverted): its upper bound at or below `1 + min_gain` (and not below
  1): the interval is tight around 1, no gain a kept fix must have is in it; at once;
- otherwise another round; at `max_rounds`, or when `tune`'s budget allows no other round,
  `inconclusive` (reverted), with how many rounds favoured the fix and what would decide it:
  the rounds that, at the spread and the estimate measured, would take the interval past a
  bound (`rounds_to_decide`), and their time. A nanoGPT trial that ended "0.57-17.81x over 6
  rounds, no measurable effect" with all six rounds favouring the fix was such a case: it is
  inconclusive, not "no effect".

Why 99%: a trial looks at its interval after every round, up to five times, and a do-nothing
change must not be called faster or slower in ten trials of the benchmark (simulated with a
round-to-round spread of 10-25% and heavy tails: a do-nothing change is kept in under 1% of
trials and called slower in about 1%; at 95% those were 2% and 4%). Simulated again for this
rule (4000 trials a case, each round's log-ratio the spread times Student's t on 3 degrees of
freedom, up to 6 rounds, `min_gain` 5%): a do-nothing change at a 10% spread was kept in 0.3%
of trials and called slower in 0.9% (the rest: inconclusive 95%, no measurable effect 3.7%); at
25%, kept 0.9%, slower 1.4%. The price is rounds: a 1.3x fix was kept in 60% of trials at a 10%
spread and 19% at 20%; the others end inconclusive, saying what would decide them.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from torchtop.model.rounds import (
    FASTER,
    INCONCLUSIVE,
    NO_EFFECT,
    SLOWER,
    RoundsEstimate,
    favouring_text,
    interval_text,
)
from torchtop.model.trials import Span
from torchtop.trials.stats import estimate_rounds, t_quantile

MAX_MORE_ROUNDS = 30
"""`rounds_to_decide` looks this far: beyond it, no trial's rounds would decide."""


@dataclass(frozen=True)
class TrialSettings:
    min_gain: float = 0.02
    """A kept fix is at least this much faster (0.05: 5%), at the interval's lower bound."""
    confidence: float = 0.99
    """The two-sided level of the interval over the rounds."""
    min_rounds: int = 2
    """Rounds before any decision: the least that has a spread."""
    max_rounds: int = 6
    min_duration_s: float = 5.0
    """Every run (baseline and fix, every round) measures at least this long after its warm-up:
    at 40 steps/s, 20 steps are half a second, shorter than a DataLoader's burst cycle."""
    max_warmup_s: float = Span.max_warmup_s
    """A run that never settles stops warming up after this long (`tuning.budget` shortens
    it for a trial sized down to fit `tune`'s budget)."""
    capture_output: bool = True

    def span(self, steps: int, warmup_steps: int) -> Span:
        """What each run of a trial measures: the same for both variants."""
        return Span(steps, warmup_steps, self.min_duration_s, max_warmup_s=self.max_warmup_s)


@dataclass(frozen=True)
class Decision:
    kept: bool
    effect: str
    """`FASTER`, `SLOWER`, `NO_EFFECT` or `INCONCLUSIVE` (`model.rounds`): the outcome."""
    reason: str
    estimate: RoundsEstimate
    more_rounds: int | None = None
    """Inconclusive: the rounds more that would decide at the spread measured (None: none
    within `MAX_MORE_ROUNDS`, or a decided trial)."""
    decides_with: str | None = None
    """Inconclusive: what would decide it, in words (`about 4 more rounds (about 140 s) ...`)."""


def decide(
    ratios: Sequence[float],
    settings: TrialSettings,
    final: bool,
    round_s: float | None = None,
    by_budget: bool = False,
) -> Decision | None:
    """The decision on the rounds' ratios so far; None to measure another round. `final`: no
    other round will be measured; `by_budget`: because `tune`'s budget allows none; `round_s`:
    what another round takes, to say what would decide an inconclusive trial."""
    estimate = estimate_rounds(ratios, settings.confidence)
    said = rounds_text(estimate)
    low, high = estimate.low, estimate.high
    margin = 1.0 + settings.min_gain
    if low is not None and high is not None and estimate.rounds >= settings.min_rounds:
        if high < 1.0:
            return Decision(False, SLOWER, f"{SLOWER} beyond noise: {said}; reverted", estimate)
        if low > margin:
            return Decision(True, FASTER, f"{FASTER} beyond noise: {said}", estimate)
        if high <= margin:
            why = f"{NO_EFFECT}: {said}: no gain of {settings.min_gain:.0%} in it; reverted"
            return Decision(False, NO_EFFECT, why, estimate)
    if not final:
        return None
    more = rounds_to_decide(estimate.ratios, settings)
    decides = _what_decides(more, round_s, by_budget)
    why = f"{INCONCLUSIVE}: {said}: {_unsettled(estimate, margin)}; {decides}; reverted"
    return Decision(False, INCONCLUSIVE, why, estimate, more, decides)


def _unsettled(estimate: RoundsEstimate, margin: float) -> str:
    """`6 of 6 rounds favoured the fix, but its interval spans 1.05x, ...`."""
    favoured = favouring_text(estimate.favouring, estimate.rounds)
    if estimate.low is None:
        return f"{favoured}, but one round has no spread to tell it from noise"
    return f"{favoured}, but its interval spans {margin:.2f}x, the least gain a kept fix shows"


def _what_decides(more: int | None, round_s: float | None, by_budget: bool) -> str:
    """`about 2 more rounds (about 70 s) would decide it at this spread`."""
    if more is None:
        return f"at this spread, not even {MAX_MORE_ROUNDS} more rounds would decide it"
    plural = "round" if more == 1 else "rounds"
    took = f" (about {more * round_s:.0f} s)" if round_s else ""
    said = f"about {more} more {plural}{took} would decide it at this spread"
    if by_budget and round_s:
        return f"{said}: a --for {math.ceil(more * round_s / 10.0) * 10:.0f} s longer"
    return said


def rounds_to_decide(ratios: Sequence[float], settings: TrialSettings) -> int | None:
    """How many more rounds, measuring the estimate and spread of `ratios` again, would take
    the interval past a bound (faster, slower, or within the margin); None: not within
    `MAX_MORE_ROUNDS`. One round has no spread: at least the rounds to reach `min_rounds`."""
    if len(ratios) < 2:
        return max(settings.min_rounds - len(ratios), 1)
    logs = [math.log(r) for r in ratios]
    mean, spread = statistics.fmean(logs), statistics.stdev(logs)
    edge = math.log(1.0 + settings.min_gain)
    for more in range(1, MAX_MORE_ROUNDS + 1):
        count = len(logs) + more
        reach = t_quantile(0.5 + settings.confidence / 2.0, count - 1) * spread / math.sqrt(count)
        if mean - reach > edge or mean + reach < 0.0 or 0.0 <= mean + reach <= edge:
            return more
    return None


def rounds_text(estimate: RoundsEstimate) -> str:
    """`1.03x, 99% interval 0.91-1.17x over 6 rounds (1.01x, 0.95x, ...)`."""
    ratios = ", ".join(f"{r:.2f}x" for r in estimate.ratios)
    interval = interval_text(estimate.low, estimate.high, estimate.confidence)
    plural = "round" if estimate.rounds == 1 else "rounds"
    return f"{estimate.speedup:.2f}x, {interval} over {estimate.rounds} {plural} ({ratios})"
