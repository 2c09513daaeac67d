"""How sure is a trial? Round ratios with Student's t, and Mann-Whitney's U for step samples.

A trial's unit of evidence is a run, not a step: the steps of one ~5 s run share its launch, its
DataLoader rhythm and the machine's load of that moment, so they are not independent samples,
and two launches of the same job differ by more than their steps' spread suggests (a do-nothing
change has measured 0.86x "beyond noise" and 1.53x "kept" at p < 1e-11 when each step counted as
a sample). So each round of a trial (one run of each variant, adjacent in time) yields one paired
ratio, after rate over before rate, and the noise is the spread of those ratios between rounds.
Ratios are multiplicative, so the estimate works on their logarithms: the point estimate is
their geometric mean, the interval Student's t over the rounds' log-ratios
(`model.rounds.RoundsEstimate`),
and `p_value` the one-sample t-test that the mean log-ratio is zero. The t distribution is the
diagnosis's own (`diagnosis.confidence.student_t_cdf`, no scipy); its quantile is found here by
bisection.

Mann-Whitney's U stays for `trials.holding`, which compares a relaunched job's recent steps
with the trial's: there a burst of slow batches must not count as a shortfall.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

from torchtop.diagnosis.confidence import student_t_cdf
from torchtop.model.rounds import RoundsEstimate


def estimate_rounds(ratios: Sequence[float], confidence: float) -> RoundsEstimate:
    """The geometric mean of the round ratios and its two-sided t interval at `confidence`."""
    if not ratios or any(r <= 0 for r in ratios):
        raise ValueError(f"round ratios must be positive, got {list(ratios)}")
    logs = [math.log(r) for r in ratios]
    mean = statistics.fmean(logs)
    if len(logs) < 2:
        return RoundsEstimate(tuple(ratios), math.exp(mean), None, None, confidence, None)
    error = statistics.stdev(logs) / math.sqrt(len(logs))
    df = len(logs) - 1
    reach = t_quantile(0.5 + confidence / 2.0, df) * error
    p_value = t_two_sided_p(mean / error, df) if error > 0 else float(mean == 0)
    return RoundsEstimate(
        tuple(ratios),
        math.exp(mean),
        math.exp(mean - reach),
        math.exp(mean + reach),
        confidence,
        p_value,
    )


def t_two_sided_p(t: float, df: int) -> float:
    """P(|T| >= |t|) for Student's t with `df` degrees of freedom."""
    return 2.0 * (1.0 - student_t_cdf(abs(t), df))


def t_quantile(p: float, df: int) -> float:
    """The `p` quantile (0.5 < p < 1) of Student's t with `df` degrees of freedom, by bisection
    on its CDF (to 1e-10, which is far below what a trial's few rounds resolve)."""
    if not 0.5 < p < 1.0:
        raise ValueError(f"p must be in (0.5, 1), got {p}")
    tail = 2.0 * (1.0 - p)
    low, high = 0.0, 1.0
    while t_two_sided_p(high, df) > tail:
        high *= 2.0
    while high - low > 1e-10 * max(1.0, high):
        middle = (low + high) / 2.0
        low, high = (middle, high) if t_two_sided_p(middle, df) > tail else (low, middle)
    return (low + high) / 2.0


def mann_whitney_p(a: Sequence[float], b: Sequence[float]) -> float:
    """Two-sided p-value of Mann-Whitney's U test (normal approximation, tie-corrected,
    continuity-corrected; enough from about eight values a side)."""
    n_a, n_b = len(a), len(b)
    if n_a == 0 or n_b == 0:
        return 1.0
    ranks, tie_term = _ranks([*a, *b])
    rank_sum_a = sum(ranks[:n_a])
    u_a = rank_sum_a - n_a * (n_a + 1) / 2.0
    mean_u = n_a * n_b / 2.0
    n = n_a + n_b
    variance = n_a * n_b / 12.0 * ((n + 1) - tie_term / (n * (n - 1)))
    if variance <= 0:
        return 1.0
    z = max(abs(u_a - mean_u) - 0.5, 0.0) / math.sqrt(variance)
    return math.erfc(z / math.sqrt(2.0))


def _ranks(values: Sequence[float]) -> tuple[list[float], float]:
    """Average ranks (1-based) and the tie correction term sum(t^3 - t)."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    ranks = [0.0] * len(values)
    tie_term = 0.0
    start = 0
    while start < len(order):
        end = start
        while end + 1 < len(order) and values[order[end + 1]] == values[order[start]]:
            end += 1
        average = (start + end) / 2.0 + 1.0
        for position in range(start, end + 1):
            ranks[order[position]] = average
        ties = end - start + 1
        tie_term += ties**3 - ties
        start = end + 1
    return ranks, tie_term
