"""Keep, revert, or measure another round: a trial's decision from its rounds' ratios.

The evidence is the rounds (`trials.stats`: one paired ratio per round, the spread between
rounds as the noise), never the steps of one run. After each round from `min_rounds` on, the
interval of the geometric-mean speedup at `confidence` decides:

- its lower bound above `1 + min_gain`: faster beyond noise, kept; measured on (up to
  `max_rounds`) while the interval is wider than `precision` either side, so that the figure
  stated is close to what the job gets in the long run;
- its upper bound below 1: slower beyond noise, reverted at once (a fix that halves the speed is
  reverted as soon as the interval says it is a loss, typically after three rounds; one round has
  no spread, so no single pair of runs reverts a fix, however slow it looked);
- its upper bound at or below `1 + min_gain`: no gain a kept fix must have, reverted at once;
- otherwise another round, and at `max_rounds` (or when tune's budget allows no more) no
  measurable effect, reverted.

Why 99%: a trial looks at its interval after every round, up to five times, and a do-nothing
change must not be called faster or slower in ten trials of the benchmark (simulated with a
round-to-round spread of 10-25% and heavy tails: a do-nothing change is kept in under 1% of
trials and called slower in about 1%; at 95% those were 2% and 4%). The price is rounds: a 1.3x
fix with a 10% spread is kept in about 70% of trials of six rounds.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from torchtop.model.rounds import FASTER, NO_EFFECT, SLOWER, RoundsEstimate, interval_text
from torchtop.model.trials import Span
from torchtop.trials.stats import estimate_rounds


@dataclass(frozen=True)
class TrialSettings:
    min_gain: float = 0.02
    """A kept fix is at least this much faster (0.05: 5%), at the interval's lower bound."""
    confidence: float = 0.99
    """The two-sided level of the interval over the rounds."""
    min_rounds: int = 2
    """Rounds before any decision: the least that has a spread."""
    max_rounds: int = 6
    precision: float = 0.25
    """A kept fix is measured on (to `max_rounds`) while its interval is wider than this
    share either side of its estimate."""
    min_duration_s: float = 5.0
    """Every run (baseline and fix, every round) measures at least this long after its warm-up:
    at 40 steps/s, 20 steps are half a second, shorter than a DataLoader's burst cycle."""
    capture_output: bool = True

    def span(self, steps: int, warmup_steps: int) -> Span:
        """What each run of a trial measures: the same for both variants."""
        return Span(steps, warmup_steps, self.min_duration_s)


@dataclass(frozen=True)
class Decision:
    kept: bool
    effect: str
    """`FASTER`, `SLOWER` or `NO_EFFECT` (`model.rounds`)."""
    reason: str
    estimate: RoundsEstimate


def decide(ratios: Sequence[float], settings: TrialSettings, final: bool) -> Decision | None:
    """The decision on the rounds' ratios so far; None to measure another round. `final`: no
    other round will be measured."""
    estimate = estimate_rounds(ratios, settings.confidence)
    said = rounds_text(estimate)
    low, high, width = estimate.low, estimate.high, estimate.half_width
    margin = 1.0 + settings.min_gain
    if low is None or high is None or width is None or estimate.rounds < settings.min_rounds:
        if not final:
            return None
        why = f"{NO_EFFECT}: {said}: too few rounds to tell it from noise; reverted"
        return Decision(False, NO_EFFECT, why, estimate)
    if high < 1.0:
        return Decision(False, SLOWER, f"slower beyond noise: {said}; reverted", estimate)
    if low > margin:
        if width <= settings.precision or final:
            return Decision(True, FASTER, f"faster beyond noise: {said}", estimate)
        return None
    if high <= margin:
        why = f"{NO_EFFECT}: {said}: no gain of {settings.min_gain:.0%} in it; reverted"
        return Decision(False, NO_EFFECT, why, estimate)
    if not final:
        return None
    why = f"{NO_EFFECT}: {said}: its interval reaches below {margin:.2f}x; reverted"
    return Decision(False, NO_EFFECT, why, estimate)


def rounds_text(estimate: RoundsEstimate) -> str:
    """`1.03x, 99% interval 0.91-1.17x over 6 rounds (1.01x, 0.95x, ...)`."""
    ratios = ", ".join(f"{r:.2f}x" for r in estimate.ratios)
    interval = interval_text(estimate.low, estimate.high, estimate.confidence)
    plural = "round" if estimate.rounds == 1 else "rounds"
    return f"{estimate.speedup:.2f}x, {interval} over {estimate.rounds} {plural} ({ratios})"
