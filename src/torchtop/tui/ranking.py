"""The suggested fixes in the order worth trying: by expected gain, highest first.

A fix's expected gain is the share of step time its finding's class explains (the verdict's
score for that class) weighted by the finding's severity: a high-severity fix for the class
that holds 60% of the step comes before a low-severity one for a class at 10%. A knob offered
by several findings is listed once, at its best place. Ties keep the rules' own order. Where
none is offered, `why_no_fix` says why for the verdict shown beside the list.
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


def why_no_fix(verdict: Verdict) -> str:
    """Why the list is empty, said of the verdict shown beside it: there is none yet, no
    finding names its class's cause, or the findings that do offer no change for this job
    (the cause is outside it, as another process taking the cores, or a change would not pay)."""
    if verdict.bottleneck == "unknown":
        return "no fix until there is a verdict"
    named = verdict.bottleneck.upper()
    rules = [f.rule for f in verdict.findings if f.bottleneck_class == verdict.bottleneck]
    if not rules:
        return f"no fix for {named}: no finding names its cause"
    offers = "offers" if len(rules) == 1 else "offer"
    return (
        f"no fix for {named}: {', '.join(rules)} {offers} no change for this job; "
        f"`torchtop rules {rules[0]}` says what recovers the time"
    )
