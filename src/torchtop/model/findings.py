"""What diagnosis concludes: findings with evidence and fixes, and the verdict."""

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


class Verdict(msgspec.Struct, frozen=True):
    bottleneck: str
    """One of the five classes, or "unknown"."""
    confidence: float
    scores: dict[str, float]
    """Each class's score (its share of step time, as its root rule counts it)."""
    reason: str
    findings: tuple[Finding, ...] = msgspec.field(default_factory=tuple)
