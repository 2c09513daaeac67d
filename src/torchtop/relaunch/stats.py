"""Is the new variant faster beyond noise? Step times compared with a rank test.

Step times are not normal (a slow batch, a collection pause, another process taking the core),
so the test is Mann-Whitney's U on the two samples of step times, two-sided, with the normal
approximation corrected for ties and continuity (enough from about eight steps a side), written
out here rather than taken from scipy. The speedup is steps/s after over steps/s before, each
the step count over the summed step time, which is what a user's wall clock sees.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Comparison:
    speedup: float
    """steps/s after / steps/s before."""
    p_value: float
    """How likely step times this different are when the change does nothing."""

    def faster(self, alpha: float, min_gain: float) -> bool:
        return self.p_value < alpha and self.speedup >= 1.0 + min_gain

    def slower(self, alpha: float) -> bool:
        return self.p_value < alpha and self.speedup < 1.0


def compare(before_s: Sequence[float], after_s: Sequence[float]) -> Comparison:
    """Compare two samples of step times (seconds)."""
    before_rate = len(before_s) / sum(before_s)
    after_rate = len(after_s) / sum(after_s)
    return Comparison(after_rate / before_rate, mann_whitney_p(before_s, after_s))


def mann_whitney_p(a: Sequence[float], b: Sequence[float]) -> float:
    """Two-sided p-value of Mann-Whitney's U test (normal approximation, tie-corrected)."""
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
