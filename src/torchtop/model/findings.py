"""What diagnosis concludes: findings with evidence, fixes and predicted gains, and the verdict."""

from __future__ import annotations

import msgspec

from torchtop.model.analysis import MetricValue


class Fix(msgspec.Struct, frozen=True):
    """A change to one knob, and how it can be applied (override, env, arg or code)."""

    knob: str
    value: object
    apply: str
    description: str
    where: str | None = None
    """For a code fix: the user's line it belongs to (`file:line: source`), or why it could not
    be located; None where no stacks were looked at."""
    predicted_gain: float | None = None
    """The speedup this fix is predicted to give on this job and machine, net of what it takes
    (more DataLoader workers take cores from the math: `advice/loader_model.py`); None where
    there is no model for it (the finding's `predicted_gain` is then the only figure)."""


class Finding(msgspec.Struct, frozen=True):
    rule: str
    bottleneck_class: str
    severity: str
    title: str
    message: str
    why: str
    evidence: dict[str, MetricValue]
    fixes: tuple[Fix, ...]
    chain: tuple[str, ...]
    """Rule ids from the tree's root down to this rule."""
    predicted_gain: float | None = None
    """The speedup predicted if the time this finding names were recovered and nothing else
    changed: `1 / (1 - share)`; None where there is no model for what its fixes recover. Not
    a bound: a fix can also speed up the rest of the step (more DataLoader workers take
    decoding off the main process too), so measured gains may exceed it."""
    recoverable_share: float | None = None
    """The share of step time (0-1) its fixes could recover at most."""


class Verdict(msgspec.Struct, frozen=True):
    bottleneck: str
    """One of the five classes, or "unknown"."""
    confidence: float
    scores: dict[str, float]
    """Each class's recoverable share of step time (0 where its root did not hold or it has
    no model); the same numbers as `recoverable`, without the None."""
    reason: str
    findings: tuple[Finding, ...] = msgspec.field(default_factory=tuple)
    recoverable: dict[str, float | None] = msgspec.field(default_factory=dict)
    """Each class's recoverable share (0-1): at most this much of the step goes if the class's
    fixes work; None where its root did not hold or there is no model."""
    predicted_gain: float | None = None
    """The verdict class's predicted speedup, `1 / (1 - share)` (a prediction, not a bound)."""
    work: str | None = None
    """The class that is the job's work itself (gpu, or cpu on a CPU-only job), where known:
    its score is its share of the step, and it is the verdict only when no stall's score
    reaches the threshold, so it may score above the stall that is the verdict."""
    unexplained_share: float | None = None
    """The part of the verdict class's share (0-1) that no finding of its class explains;
    None where its findings cover it."""
    unexplained: str | None = None
    """Where a share is unexplained: that it is, and what to record to find its cause."""


HIGH_MIN_GAIN = 1.10
"""No finding is high under this predicted gain: a few percent is not what to do first."""
MEDIUM_MIN_GAIN = 1.05
"""Under this predicted gain a finding is low."""
OFFER_MIN_GAIN = 1.04
"""A fix predicted under this net gain is not offered: about 1.0x is within what a bare A/B of
a few rounds can tell from noise (the ImageNet trainer's `-j 0` rounds spread 0.81-1.00x for a
change predicted at 1.06x), so offering it would invite a trial that cannot show a gain."""
_RANKS = ("low", "medium", "high")


def severity_for_gain(severity: str, gain: float | None) -> str:
    """`severity`, lowered to what a predicted `gain` supports (unchanged where there is no
    prediction): high from 1.10x, medium from 1.05x, else low."""
    if gain is None or severity not in _RANKS:
        return severity
    most = "high" if gain >= HIGH_MIN_GAIN else "medium" if gain >= MEDIUM_MIN_GAIN else "low"
    return min(severity, most, key=_RANKS.index)


def gain_bound(share: float | None) -> float | None:
    """The speedup if `share` of the step were recovered: `1 / (1 - share)` (Amdahl), rounded
    to 0.01; shares are capped at 0.99 so that a step with nothing else in it reads 100x, not
    infinity."""
    if share is None:
        return None
    return round(1.0 / (1.0 - min(max(share, 0.0), 0.99)), 2)


ALMOST_ALL_SHARE = 0.9
"""From this share on a prediction is said in words: `1 / (1 - share)` is 10x at 90% and
grows without limit, so a figure there says more about the model than about the job."""


def gain_text(finding: Finding) -> str:
    """A finding's one gain figure, named for what it is, the same wherever it is shown: the
    model's prediction with its assumption (never "up to": fixes can speed up more than the
    time they name), an extreme one in words, or that there is no model."""
    share, gain = finding.recoverable_share, finding.predicted_gain
    if gain is None or share is None:
        return "gain not predicted: no model for what its fixes recover"
    if share >= ALMOST_ALL_SHARE:
        return (
            f"the step is almost all {finding.bottleneck_class} ({share:.0%}): recovering it "
            "would make the job many times faster"
        )
    return (
        f"predicted {gain:.2f}x faster if its {share:.0%} of the step were recovered and "
        "nothing else changed"
    )


def gain_short(finding: Finding) -> str:
    """The same figure in a few characters, for a one-line list: `pred 1.24x`."""
    share, gain = finding.recoverable_share, finding.predicted_gain
    if gain is None or share is None:
        return "no prediction"
    if share >= ALMOST_ALL_SHARE:
        return f"almost all {finding.bottleneck_class}"
    return f"pred {gain:.2f}x"


def format_value(value: object) -> str:
    """A fix's value as a command line or a report writes it: 4.0 as 4."""
    if isinstance(value, float) and value == int(value):
        return str(int(value))
    return str(value)
