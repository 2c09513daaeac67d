"""Walk the rule tree over a set of metrics: the findings, and the verdict with its confidence.

A child rule is looked at only when its parent held. Findings are the deepest rules that held
(a root class rule is the tree's structure, not a finding). The verdict is the class whose root
held with the highest score; its confidence falls as the runner-up's score nears it and when the
evidence is thin (few steps, no step markers, a truncated file). With no usable evidence it is
`unknown`, with the reason.
"""

from __future__ import annotations

import string
from collections.abc import Mapping
from typing import Any

from torchtop.diagnosis.rules import Rule, RuleTree, offered_fixes
from torchtop.model.analysis import Metrics
from torchtop.model.findings import Finding, Verdict

_SEVERITY_ORDER = {"high": 0, "medium": 1, "low": 2}


def fired_rules(tree: RuleTree, metrics: Mapping[str, object]) -> list[str]:
    """Ids of every rule that held, parents before children."""
    fired: list[str] = []
    pending = [r.id for r in tree.roots]
    while pending:
        rule_id = pending.pop(0)
        if tree.rules[rule_id].when.holds(metrics):
            fired.append(rule_id)
            pending.extend(tree.children.get(rule_id, ()))
    return fired


def diagnose(tree: RuleTree, metrics: Metrics) -> Verdict:
    fired = fired_rules(tree, metrics)
    scores = _class_scores(tree, fired, metrics)
    bottleneck, confidence, reason = _decide(tree, scores, metrics)
    if bottleneck == "unknown":
        # Findings built on evidence too thin for a verdict would be guesses too.
        return Verdict(bottleneck, confidence, scores, reason, ())
    findings = [
        _finding(tree, tree.rules[r], metrics)
        for r in fired
        if tree.rules[r].parent is not None and not _has_fired_child(tree, r, fired)
    ]
    findings.sort(
        key=lambda f: (
            f.bottleneck_class != bottleneck,
            _SEVERITY_ORDER[f.severity],
            -scores.get(f.bottleneck_class, 0.0),
        )
    )
    return Verdict(bottleneck, confidence, scores, reason, tuple(findings))


def _has_fired_child(tree: RuleTree, rule_id: str, fired: list[str]) -> bool:
    return any(child in fired for child in tree.children.get(rule_id, ()))


def _class_scores(tree: RuleTree, fired: list[str], metrics: Metrics) -> dict[str, float]:
    scores: dict[str, float] = {}
    for root in tree.roots:
        value = root.score.evaluate(metrics) if root.score and root.id in fired else None
        number = (
            float(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0.0
        )
        scores[root.bottleneck_class] = max(scores.get(root.bottleneck_class, 0.0), number)
    return scores


def _decide(tree: RuleTree, scores: dict[str, float], metrics: Metrics) -> tuple[str, float, str]:
    settings = tree.settings
    steps = metrics.get("steps_count")
    step_count = int(steps) if isinstance(steps, int | float) else 0
    if step_count < settings.min_steps:
        return "unknown", 0.0, f"only {step_count} complete step(s); need {settings.min_steps}"
    # The evidence test vetoes only when it is known to fail: unmeasured is not thin.
    if settings.evidence is not None and settings.evidence.evaluate(metrics) is False:
        return "unknown", 0.0, settings.evidence_reason or "too little recorded activity"
    ranked = sorted(scores.items(), key=lambda item: item[1], reverse=True)
    if not ranked or ranked[0][1] < settings.min_score:
        return "unknown", 0.0, "no class explains enough of the step time"
    (best, top), runner_up = ranked[0], ranked[1][1] if len(ranked) > 1 else 0.0
    separation = (top - max(runner_up, 0.0)) / top
    confidence = (0.5 + 0.5 * separation) * _evidence_factor(step_count, metrics)
    reason = f"{best} explains {top:.0%} of the step"
    if len(ranked) > 1 and runner_up > 0:
        reason += f"; next is {ranked[1][0]} at {runner_up:.0%}"
    return best, round(confidence, 2), reason


def _evidence_factor(step_count: int, metrics: Metrics) -> float:
    factor = 1.0 if step_count >= 3 else 0.8 if step_count == 2 else 0.65
    if metrics.get("has_step_markers") is False:
        factor *= 0.85
    if metrics.get("trace_truncated"):
        # Device events come last in a Kineto file, so a cut-off file loses them first.
        factor *= 0.7
    return factor


def _finding(tree: RuleTree, rule: Rule, metrics: Metrics) -> Finding:
    return Finding(
        rule=rule.id,
        bottleneck_class=rule.bottleneck_class,
        severity=_severity(rule, metrics),
        title=rule.title,
        message=render(rule.message or rule.title, metrics),
        why=rule.why,
        evidence={name: metrics.get(name) for name in rule.evidence},
        fixes=offered_fixes(rule, metrics),
        chain=tree.chain(rule.id),
    )


def _severity(rule: Rule, metrics: Metrics) -> str:
    for level, test in rule.severity_when:
        if test.holds(metrics):
            return level
    return rule.severity


class _NotMeasured:
    def __format__(self, spec: str) -> str:
        return "n/a"


class _MetricView(dict[str, Any]):
    def __missing__(self, key: str) -> Any:
        return _NotMeasured()


def render(template: str, metrics: Mapping[str, object]) -> str:
    """Fill `{metric:format}` fields; a metric not measured prints as n/a."""
    view = _MetricView({k: (_NotMeasured() if v is None else v) for k, v in metrics.items()})
    try:
        return string.Formatter().vformat(template, (), view)
    except (ValueError, TypeError):
        return template
