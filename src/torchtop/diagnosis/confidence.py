"""A verdict's confidence: the chance that much more evidence of the same job keeps the verdict.

The verdict is a comparison: the deciding share against the next decision (the runner-up
stall, or the threshold; for a work verdict, the threshold against the largest stall). Its
margin is measured over evidence units, which must be independent looks at the job: the
profiled steps of a trace or a run, or the py-spy samples of a job attached without an agent.
The margin's uncertainty is its spread per unit over the square root of the number of units,
and the confidence is the probability, under that uncertainty, that the true margin has the
sign the verdict says it has: 0.5 is a coin toss, 1.0 means nothing else is near.

One formula for every mode, so a number means the same under `run`, `analyze` and `attach`.
The only difference is what a unit can tell about its own spread:
- a stack sample is in one place: its share of a class is 0 or 1, so its spread is exactly the
  multinomial one (`bound_variance`), and the normal approximation applies;
- a step has its own measured shares, so the spread is measured over the steps (with a floor,
  `min_unit_spread`: two steps alike do not prove that a job never varies) and the margin over
  its sample sd is read against Student's t, which is wide for a few steps;
- a single step (or a trace without step markers) cannot show a spread: it is counted as one
  sample, the most a share of that mean can vary.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from torchtop.diagnosis.schema import Confidence


def bound_variance(shares: Sequence[float], units: int, pseudo_count: float) -> float:
    """The per-unit variance of a margin between one share and a threshold (one share) or two
    shares (their difference) when each unit is a single sample: p(1-p), or p1+p2-(p1-p2)^2.
    Shares are smoothed (Jeffreys' pseudo-count), so none seen is not certainty of none."""
    smoothed = [(s * units + pseudo_count) / (units + 2 * pseudo_count) for s in shares]
    if len(smoothed) == 1:
        (p,) = smoothed
        return p * (1.0 - p)
    p1, p2 = smoothed[:2]
    return p1 + p2 - (p1 - p2) ** 2


def margin_confidence(
    margin: float,
    shares: Sequence[float],
    unit_margins: Sequence[float],
    units: int,
    policy: Confidence,
) -> float:
    """P(true margin > 0) given the measured `margin` (0 or more) over `units` units; the
    per-unit margins where units have their own shares (steps), else the samples' bound."""
    units = max(units, 1)
    if len(unit_margins) >= 2:
        m = len(unit_margins)
        mean = sum(unit_margins) / m
        spread = math.sqrt(sum((d - mean) ** 2 for d in unit_margins) / (m - 1))
        spread = max(spread, policy.min_unit_spread)
        return student_t_cdf(margin / (spread / math.sqrt(m)), m - 1)
    variance = bound_variance(shares, units, policy.pseudo_count)
    if variance <= 0.0:
        return 1.0 if margin > 0 else 0.5
    return normal_cdf(margin / math.sqrt(variance / units))


def normal_cdf(z: float) -> float:
    return 0.5 * (1.0 + math.erf(z / math.sqrt(2.0)))


def student_t_cdf(t: float, dof: int) -> float:
    """Student's t CDF (no scipy in the analyzer): the regularized incomplete beta function,
    I_x(dof/2, 1/2) with x = dof / (dof + t^2), by its continued fraction."""
    if t == 0.0:
        return 0.5
    x = dof / (dof + t * t)
    tail = 0.5 * _incomplete_beta(x, dof / 2.0, 0.5)
    return 1.0 - tail if t > 0 else tail


def _incomplete_beta(x: float, a: float, b: float) -> float:
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    log_front = (
        math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    )
    # The continued fraction converges fast only below (a+1)/(a+b+2); else use the symmetry.
    if x < (a + 1.0) / (a + b + 2.0):
        return math.exp(log_front) * _beta_fraction(x, a, b) / a
    return 1.0 - math.exp(log_front) * _beta_fraction(1.0 - x, b, a) / b


def _beta_fraction(x: float, a: float, b: float) -> float:
    """Lentz's method for the incomplete beta's continued fraction (Numerical Recipes 6.4)."""
    tiny = 1e-300
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    result = d
    for m in range(1, 200):
        for numerator in (
            m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
            -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1)),
        ):
            d = 1.0 + numerator * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + numerator / c
            c = c if abs(c) > tiny else tiny
            result *= d * c
        if abs(d * c - 1.0) < 1e-12:
            break
    return result
