"""A trial's rounds as data: the speedup they measured with its interval, and how it reads.

A round is one run of each variant, adjacent in time; its ratio is the after rate over the
before rate. `trials.stats.estimate_rounds` makes a `RoundsEstimate` from the ratios (the
geometric mean, and Student's t interval over the rounds' log-ratios); `trials.decision` says
what it shows (`FASTER`: kept; `SLOWER`: reverted; `INCONCLUSIVE`: reverted, the rounds
could not tell; `NO_EFFECT`: reverted, the interval sits within the gain a kept fix must
have). The words live here, with the data, so that
the dashboard, the text report and `tune`'s summary say a trial's figures alike: the measured
speedup with its interval, and beside it the finding's figure for what it is, a prediction
(`predicted_text`: the finding's prediction, as the finding words it).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from torchtop.model.findings import ALMOST_ALL_SHARE

FASTER = "faster"
SLOWER = "slower"
NO_EFFECT = "no measurable effect"
INCONCLUSIVE = "inconclusive"
FAILED = "failed"
"""A run of the trial failed: reverted, undecided."""
CANCELLED = "cancelled"

REVERTED_BY_YOU = "reverted by you"
"""A kept fix the user took back (`r`), on the trial panel and in the report alike."""

HOLDS = "holds"
NO_LONGER_HOLDS = "no longer holds"
NOT_JUDGED = "not judged yet"
GAIN_GONE = "no faster than before the fix"
"""A kept fix's later check, worded alike on the dashboard, in its revert dialog and in the
report: it `holds` (the relaunched job runs as its trial said), it `no longer holds` (slower
beyond noise and beyond what the trial's own runs allow; `GAIN_GONE` where it runs back at the
rate before the fix), or it is `not judged yet` (too few steps)."""


def holding_words(holds: bool | None, gain_gone: bool | None = None) -> str:
    """`holds`, `no longer holds`, `no longer holds: no faster than before the fix`, or `not
    judged yet`: the check's outcome as every surface names it."""
    if holds is None:
        return NOT_JUDGED
    if holds:
        return HOLDS
    return f"{NO_LONGER_HOLDS}: {GAIN_GONE}" if gain_gone else NO_LONGER_HOLDS


def outcome_words(outcome: str | None, kept: bool) -> str:
    """`faster: kept`, `slower: reverted`, `inconclusive: reverted`: the outcome as named on
    every surface, with what it did to the fix."""
    verdict = "kept" if kept else "reverted"
    if outcome == CANCELLED:
        return "cancelled: not kept"
    return f"{outcome}: {verdict}" if outcome else verdict


def outcome_text(
    outcome: str | None,
    kept: bool,
    favouring: int | None,
    rounds: int,
    decides_with: str | None,
) -> str:
    """`outcome_words`, and for an inconclusive trial how many rounds favoured the fix and what
    would decide it: `inconclusive: reverted (6 of 6 rounds favoured the fix; about 4 more
    rounds (about 140 s) would decide it at this spread)`."""
    said = outcome_words(outcome, kept)
    if outcome != INCONCLUSIVE or favouring is None:
        return said
    details = [favouring_text(favouring, rounds), *([decides_with] if decides_with else [])]
    return f"{said} ({'; '.join(details)})"


@dataclass(frozen=True)
class RoundsEstimate:
    """The speedup a trial's rounds measured, with its interval over the rounds."""

    ratios: tuple[float, ...]
    """Each round's after rate over its before rate, in the order measured."""
    speedup: float
    """The geometric mean of `ratios`: the point estimate."""
    low: float | None
    """The interval's bounds at `confidence`; None with fewer than two rounds (no spread)."""
    high: float | None
    confidence: float
    p_value: float | None
    """The t-test that the change does nothing (mean log-ratio 0); None under two rounds."""

    @property
    def rounds(self) -> int:
        return len(self.ratios)

    @property
    def favouring(self) -> int:
        """Rounds whose ratio favoured the change (above 1)."""
        return sum(1 for ratio in self.ratios if ratio > 1.0)

    @property
    def half_width(self) -> float | None:
        """The interval's half-width as a share of the estimate (0.1: within about 10%)."""
        if self.low is None or self.high is None:
            return None
        return math.sqrt(self.high / self.low) - 1.0


def interval_text(low: float | None, high: float | None, confidence: float | None) -> str:
    """`99% interval 3.51-4.52x`, or what stands in for one."""
    if low is None or high is None or confidence is None:
        return "no interval"
    return f"{confidence:.0%} interval {_bound(low)}-{_bound(high)}x"


def favouring_text(favouring: int, rounds: int) -> str:
    """`6 of 6 rounds favoured the fix`."""
    return f"{favouring} of {rounds} round{'s' if rounds != 1 else ''} favoured the fix"


def _bound(value: float) -> str:
    """A bound as it reads: two rounds far apart give one of 1e15 on 1 degree of freedom."""
    if value >= 1000.0:
        return ">999"
    if value < 0.01:
        return "<0.01"
    return f"{value:.0f}" if value >= 100.0 else f"{value:.2f}"


def claim_text(
    speedup: float | None,
    low: float | None,
    high: float | None,
    confidence: float | None,
    rounds: int,
) -> str:
    """`measured 3.98x (99% interval 3.51-4.52x, 4 rounds)`."""
    if speedup is None:
        return "not measured"
    if rounds == 0:
        return f"measured {speedup:.2f}x"
    plural = "round" if rounds == 1 else "rounds"
    return f"measured {speedup:.2f}x ({interval_text(low, high, confidence)}, {rounds} {plural})"


def estimate_claim(speedup: float | None, estimate: RoundsEstimate | None) -> str:
    """`claim_text` of a trial's estimate (none: no round completed)."""
    if estimate is None:
        return claim_text(speedup, None, None, None, 0)
    low, high, confidence = estimate.low, estimate.high, estimate.confidence
    return claim_text(speedup, low, high, confidence, estimate.rounds)


def predicted_text(predicted_gain: float | None) -> str:
    """The finding's figure beside a trial, as the finding itself says it (`gain_text`): a
    prediction, not a bound (more workers can also overlap compute, so a measured gain may pass
    it): `predicted 6.25x`; a step almost all stall (a prediction of 10x or more) in words."""
    if predicted_gain is None:
        return "no prediction"
    if predicted_gain >= 1.0 / (1.0 - ALMOST_ALL_SHARE):
        return "predicted: many times faster (the step was almost all stall)"
    return f"predicted {predicted_gain:.2f}x"
