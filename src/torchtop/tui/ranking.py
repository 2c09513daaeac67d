"""The suggested fixes in the order worth trying: by expected gain, highest first.

A fix's expected gain is the share of step time its finding's class explains (the verdict's
score for that class) weighted by the finding's severity: a high-severity fix for the class
that holds 60% of the step comes before a low-severity one for a class at 10%. A knob offered
by several findings is listed once, at its best place. Ties keep the rules' own order.
"""

from __future__ import annotations

from dataclasses import dataclass

from torchtop.model.findings import Finding, Fix, Verdict

SEVERITY_WEIGHT = {"high": 1.0, "medium": 0.6, "low": 0.3}


@dataclass(frozen=True)
class RankedFix:
    fix: Fix
    finding: Finding
    gain: float
    """Class score times severity weight: comparable between fixes, not a promised speed-up."""
    class_share: float
    """The share of step time the finding's class explains (0-1)."""

    @property
    def key(self) -> tuple[str, str]:
        return self.fix.knob, repr(self.fix.value)


def expected_gain(verdict: Verdict, finding: Finding) -> float:
    share = verdict.scores.get(finding.bottleneck_class, 0.0)
    return max(share, 0.0) * SEVERITY_WEIGHT.get(finding.severity, 0.3)


def rank_fixes(verdict: Verdict) -> tuple[RankedFix, ...]:
    best: dict[tuple[str, str], tuple[tuple[float, int, int], RankedFix]] = {}
    for f_index, finding in enumerate(verdict.findings):
        gain = expected_gain(verdict, finding)
        share = max(verdict.scores.get(finding.bottleneck_class, 0.0), 0.0)
        for x_index, fix in enumerate(finding.fixes):
            ranked = RankedFix(fix, finding, gain, share)
            place = (-gain, f_index, x_index)
            if ranked.key not in best or place < best[ranked.key][0]:
                best[ranked.key] = (place, ranked)
    return tuple(ranked for _, ranked in sorted(best.values(), key=lambda item: item[0]))
