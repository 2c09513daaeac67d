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
    """The speedup bound if the time this finding names were recovered: `1 / (1 - share)`;
    None where there is no model for what its fixes recover."""
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
    """The verdict class's speedup bound, `1 / (1 - share)`."""
    unexplained_share: float | None = None
    """The part of the verdict class's share (0-1) that no finding of its class explains;
    None where its findings cover it."""
    unexplained: str | None = None
    """Where a share is unexplained: that it is, and what to record to find its cause."""


def gain_bound(share: float | None) -> float | None:
    """The speedup if `share` of the step were recovered: `1 / (1 - share)` (Amdahl), rounded
    to 0.01; shares are capped at 0.99 so that a step with nothing else in it reads 100x, not
    infinity."""
    if share is None:
        return None
    return round(1.0 / (1.0 - min(max(share, 0.0), 0.99)), 2)


def gain_text(finding: Finding) -> str:
    """How a finding's predicted gain reads wherever a finding is shown."""
    if finding.predicted_gain is None:
        return "predicted gain: no model for what its fixes recover"
    share = finding.recoverable_share
    of_step = "" if share is None else f" ({share:.0%} of the step recovered)"
    return f"could be up to {finding.predicted_gain:.2f}x faster{of_step}"


def format_value(value: object) -> str:
    """A fix's value as a command line or a report writes it: 4.0 as 4."""
    if isinstance(value, float) and value == int(value):
        return str(int(value))
    return str(value)
