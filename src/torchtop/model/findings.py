"""What diagnosis concludes: findings with evidence and fixes, and the verdict."""

from __future__ import annotations

from dataclasses import dataclass, field

from torchtop.model.analysis import MetricValue


@dataclass(frozen=True)
class Fix:
    """A change to one knob, and how it can be applied (override, env, arg or code)."""

    knob: str
    value: object
    apply: str
    description: str


@dataclass(frozen=True)
class Finding:
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


@dataclass(frozen=True)
class Verdict:
    bottleneck: str
    """One of the five classes, or "unknown"."""
    confidence: float
    scores: dict[str, float]
    """Each class's score (its share of step time, as its root rule counts it)."""
    reason: str
    findings: tuple[Finding, ...] = field(default_factory=tuple)
