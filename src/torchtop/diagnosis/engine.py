"""Walk the rule tree over a set of metrics: the findings, and the verdict with its confidence.

A child rule is looked at only when its parent held. Findings are the deepest rules that held
(a root class rule is the tree's structure, not a finding). The verdict is a model, not a fit:
each class that held says what share of the step its fixes could recover at most (the breakdown
is exclusive, so a stall's share is time the device, or the CPU's math, is not working), and
`1 / (1 - share)` predicts the gain (a prediction, not a bound: a fix may speed up the rest
too). The stall that could recover the most is the verdict when it
recovers at least `min_recoverable_share`; else the job is bound by its work itself (`gpu`, or
`cpu` on a CPU-only job). Confidence is the chance that much more evidence of the same job
keeps the verdict: the margin to the next decision (the runner-up stall, or the threshold)
against its uncertainty over the evidence units (`diagnosis/confidence.py`), lowered for a
truncated trace or one with events set aside (`[confidence]` in `rules/_verdict.toml`). With no
usable evidence it is `unknown`, with the reason.
"""

from __future__ import annotations

import string
from collections.abc import Mapping, Sequence

from torchtop.diagnosis.confidence import margin_confidence
from torchtop.diagnosis.rules import Rule, RuleTree, VerdictSettings, offered_fixes
from torchtop.model.analysis import Metrics, StepCost
from torchtop.model.findings import Finding, Verdict, gain_bound, severity_for_gain

_SEVERITY_ORDER = {"high": 0, "medium": 1, "low": 2}
_UNEXPLAINED = "No finding explains {unexplained_share:.0%} of the step."
CLOSE_CALL = 0.6
"""Under this confidence the verdict's sentence names the runner-up and says the two are close
(0.52 on the DLRM rank 0 trace, whose host work and NCCL shares differ by 5 points)."""


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


def diagnose(tree: RuleTree, metrics: Metrics, units: Sequence[StepCost] = ()) -> Verdict:
    """The verdict on `metrics`. `units`: the steps the shares were measured over, each with
    its own split, so the confidence reads their spread; without them the evidence count is
    `steps_count` single samples (a job attached without an agent counts its stack samples)."""
    fired = fired_rules(tree, metrics)
    shares = recoverable_shares(tree, fired, metrics)
    scores = {cls: share or 0.0 for cls, share in shares.items()}
    work = _work_class(tree, fired, metrics)
    competing = {
        cls: share
        for cls, share in shares.items()
        if cls != work or all(r.competes for r in tree.roots if r.bottleneck_class == cls)
    }
    evidence = _UnitShares(tree, fired, metrics, units)
    bottleneck, confidence, reason = _decide(tree, competing, work, metrics, evidence)
    if bottleneck == "unknown":
        # Findings built on evidence too thin for a verdict would be guesses too.
        return Verdict(bottleneck, confidence, scores, reason, (), shares, None, work)
    findings = [
        _finding(tree, tree.rules[r], metrics, shares)
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
    gain = gain_bound(shares.get(bottleneck))
    left, note = _unexplained(tree, bottleneck, work, findings, shares, metrics)
    if bottleneck == work:
        reason = _work_held_back(reason, findings, work, tree.settings.min_recoverable_share)
    return Verdict(
        bottleneck,
        confidence,
        scores,
        reason,
        tuple(findings),
        shares,
        gain,
        work,
        unexplained_share=left,
        unexplained=note,
    )


def standing_findings(tree: RuleTree, metrics: Metrics, ids: Sequence[str]) -> tuple[Finding, ...]:
    """The findings of the rules `ids` that held (their parents too), whatever the verdict:
    the long run's (memory growth, stalls on a schedule) are read over every step, not from
    the step's breakdown, so a verdict left unknown for thin profiler evidence keeps them."""
    fired = fired_rules(tree, metrics)
    shares = recoverable_shares(tree, fired, metrics)
    return tuple(_finding(tree, tree.rules[r], metrics, shares) for r in fired if r in ids)


def _unexplained(
    tree: RuleTree,
    verdict: str,
    work: str | None,
    findings: list[Finding],
    shares: dict[str, float | None],
    metrics: Metrics,
) -> tuple[float | None, str | None]:
    """The part of the verdict class's share that no finding of its class explains, and the
    note saying so with what to record (its root's `unexplained`); (None, None) where its
    findings cover it. A finding with no model of its own explains its class's whole share; one
    whose fix the breakdown cannot bound (`recoverable = false`) explains none of it, yet names
    the work itself where the verdict is the work class."""
    own = [f for f in findings if f.bottleneck_class == verdict]
    share = shares.get(verdict) or 0.0
    left = max(share - sum(f.recoverable_share or 0.0 for f in own), 0.0)
    if own and (verdict == work or left < tree.settings.min_recoverable_share):
        return None, None
    root = next((r for r in tree.roots if r.bottleneck_class == verdict), None)
    text = root.unexplained if root is not None and root.unexplained else _UNEXPLAINED
    return round(left, 4), render(text, {**metrics, "unexplained_share": left})


def _work_held_back(
    reason: str, findings: list[Finding], work: str | None, threshold: float
) -> str:
    """A work verdict's reason, unless a finding of the work's own class recovers a share of
    its own past the threshold (other processes taking the job's cores): then the work does
    not fill the step by itself, and the reason names what takes part of it."""
    held = next(
        (
            f
            for f in findings
            if f.bottleneck_class == work
            and f.recoverable_share is not None
            and f.recoverable_share >= threshold
        ),
        None,
    )
    said = f": the {work} work itself fills it"
    if held is None or said not in reason:
        return reason
    what = held.title[:1].lower() + held.title[1:]
    lost = f"{held.recoverable_share:.0%} of its time lost"
    return reason.replace(said, f": the {work} work fills it, but {what} ({held.rule}: {lost})")


def _has_fired_child(tree: RuleTree, rule_id: str, fired: list[str]) -> bool:
    return any(child in fired for child in tree.children.get(rule_id, ()))


def recoverable_shares(
    tree: RuleTree, fired: list[str], metrics: Metrics
) -> dict[str, float | None]:
    """Each class's recoverable share (0-1), None where its root did not hold or its model
    needs a metric that was not measured."""
    shares: dict[str, float | None] = {}
    for root in tree.roots:
        value = _share(root, metrics) if root.id in fired else None
        known = shares.get(root.bottleneck_class)
        shares[root.bottleneck_class] = value if known is None else max(known, value or 0.0)
    return shares


def _share(rule: Rule, metrics: Metrics) -> float | None:
    value = rule.recoverable.evaluate(metrics) if rule.recoverable is not None else None
    if not isinstance(value, int | float) or isinstance(value, bool):
        return None
    return min(max(float(value), 0.0), 1.0)


def _work_class(tree: RuleTree, fired: list[str], metrics: Metrics) -> str | None:
    """The class that is the job's work itself (its fixes make the work faster, they do not
    remove a stall), or None when the metrics do not say which."""
    for root in tree.roots:
        if root.id in fired and root.work is not None and root.work.holds(metrics):
            return root.bottleneck_class
    return None


def _damaged(metrics: Metrics, settings: VerdictSettings) -> bool:
    """Whether the trace lost evidence in reading: cut off, or events set aside past the
    share `[confidence]` allows."""
    set_aside = metrics.get("trace_set_aside_share")
    if isinstance(set_aside, int | float) and set_aside >= settings.confidence.set_aside_share:
        return True
    return bool(metrics.get("trace_truncated"))


def _decide(
    tree: RuleTree,
    shares: dict[str, float | None],
    work: str | None,
    metrics: Metrics,
    units: _UnitShares,
) -> tuple[str, float, str]:
    settings = tree.settings
    steps = metrics.get("steps_count")
    step_count = int(steps) if isinstance(steps, int | float) else 0
    if step_count < settings.min_steps:
        return "unknown", 0.0, f"only {step_count} complete step(s); need {settings.min_steps}"
    # The evidence test vetoes only when it is known to fail: unmeasured is not thin.
    if settings.evidence is not None and settings.evidence.evaluate(metrics) is False:
        return "unknown", 0.0, settings.evidence_reason or "too little recorded activity"
    stalls = sorted(
        ((cls, share) for cls, share in shares.items() if share is not None),
        key=lambda item: item[1],
        reverse=True,
    )
    threshold = settings.min_recoverable_share
    top_class, top = stalls[0] if stalls else ("", 0.0)
    # Device events come last in a Kineto file, so a cut-off file loses them first.
    factor = settings.confidence.truncated_trace if _damaged(metrics, settings) else 1.0
    if top >= threshold:
        # The nearest other decision: the runner-up stall, or the work class at the threshold.
        runner_class, runner_up = stalls[1] if len(stalls) > 1 else ("", 0.0)
        # The verdict changes if the runner-up overtakes it, or if the top share falls under
        # the threshold, unless the work class is the top stall itself (then it stays).
        if runner_up > threshold or top_class == work:
            sure = units.confidence(top - runner_up, (top_class, top), (runner_class, runner_up))
        else:
            sure = units.confidence(top - threshold, (top_class, top), ("", threshold))
        # The share alone: the gain figure is the findings' (`gain_text`), one per finding.
        reason = f"{top_class} could recover {top:.0%} of the step"
        if runner_up >= 0.005:
            reason += f"; next is {runner_class} at {runner_up:.0%}"
        if sure * factor < CLOSE_CALL:
            if runner_up > threshold or top_class == work:
                reason += f": a close call, {runner_class or 'the work'} could take the verdict"
            else:
                reason += f": a close call, just above the {threshold:.0%} threshold"
                reason += f" below which {work or 'the work'} is the verdict" if work else ""
        return top_class, round(sure * factor, 2), reason
    unsettled = _unmeasured(tree, shares, work, metrics)
    if unsettled or work is None:
        # The work is the verdict only once every stall is ruled out, not merely unmeasured.
        missing = (
            f"{', '.join(unsettled)} not measured"
            if unsettled
            else "whether the job's work runs on a GPU or the CPU not known"
        )
        return "unknown", 0.0, f"no stall could recover {threshold:.0%} of the step; {missing}"
    # Only another class's stall reaching the threshold changes a work verdict.
    # None seen is a share of 0 seen, not certainty: it is smoothed like any other.
    other_class, other = next(((c, v) for c, v in stalls if c != work), ("any other", 0.0))
    sure = units.confidence(threshold - other, ("", threshold), (other_class, other))
    reason = f"no stall could recover {threshold:.0%} of the step"
    if top >= 0.005:
        reason += f" (the largest, {top_class}, {top:.0%})"
    reason += f": the {work} work itself fills it"
    if sure * factor < CLOSE_CALL and other_class != "any other":
        reason += f"; a close call: {other_class}, near the threshold, could take the verdict"
    return work, round(sure * factor, 2), reason


def _unmeasured(
    tree: RuleTree, shares: dict[str, float | None], work: str | None, metrics: Metrics
) -> list[str]:
    """Stall classes whose share is not known: their root neither held nor is known not to,
    and their recoverable share names a metric that was not measured."""
    return [
        root.bottleneck_class
        for root in tree.roots
        if root.bottleneck_class != work
        and shares.get(root.bottleneck_class) is None
        and root.when.evaluate(metrics) is not False
        and _share(root, metrics) is None
    ]


class _UnitShares:
    """The evidence units (steps with their own split, if any) and their count, for the spread
    of a margin: each unit's share of a class is its root's recoverable share over the unit's
    split, every other metric the job's."""

    def __init__(
        self, tree: RuleTree, fired: list[str], metrics: Metrics, units: Sequence[StepCost]
    ) -> None:
        self.roots = [r for r in tree.roots if r.id in fired]
        self.metrics = metrics
        self.units = [u for u in units if u.duration_us > 0]
        self.policy = tree.settings.confidence
        steps = metrics.get("steps_count")
        self.count = len(self.units) or (int(steps) if isinstance(steps, int | float) else 0)

    def confidence(self, margin: float, high: tuple[str, float], low: tuple[str, float]) -> float:
        """How sure `high` stands above `low` (a class and its share, or "" and the threshold)."""
        per_unit = [self._share(u, high) - self._share(u, low) for u in self.units]
        shares = [share for cls, share in (high, low) if cls]
        return margin_confidence(margin, shares, per_unit, self.count, self.policy)

    def _share(self, unit: StepCost, side: tuple[str, float]) -> float:
        cls, fixed = side
        if not cls:
            return fixed
        split = {f"{c}_share": t / unit.duration_us for c, t in unit.parts_us.items()}
        unit_metrics = {**self.metrics, **split}
        values = [_share(r, unit_metrics) for r in self.roots if r.bottleneck_class == cls]
        return max((v for v in values if v is not None), default=0.0)


def _finding(
    tree: RuleTree, rule: Rule, metrics: Metrics, shares: dict[str, float | None]
) -> Finding:
    # A rule whose fix recovers only part of its class (or nothing the breakdown can bound:
    # `recoverable = false`) says so; else the class's share.
    own = rule.recoverable is not None
    share = _share(rule, metrics) if own else shares.get(rule.bottleneck_class)
    gain = gain_bound(share)
    return Finding(
        rule=rule.id,
        bottleneck_class=rule.bottleneck_class,
        # Severity follows the predicted gain: 5% of the step is not high whatever the rule.
        severity=severity_for_gain(_severity(rule, metrics), gain),
        title=rule.title,
        message=render(rule.message or rule.title, metrics),
        why=rule.why,
        evidence={name: metrics.get(name) for name in rule.evidence},
        fixes=offered_fixes(rule, metrics),
        chain=tree.chain(rule.id),
        predicted_gain=gain,
        recoverable_share=None if share is None else round(share, 4),
    )


def _severity(rule: Rule, metrics: Metrics) -> str:
    for level, test in rule.severity_when:
        if test.holds(metrics):
            return level
    return rule.severity


class _NotMeasured:
    def __format__(self, spec: str) -> str:
        return "n/a"


class _MetricView(dict[str, object]):
    def __missing__(self, key: str) -> object:
        return _NotMeasured()


def render(template: str, metrics: Mapping[str, object]) -> str:
    """Fill `{metric:format}` fields; a metric not measured prints as n/a."""
    view = _MetricView({k: (_NotMeasured() if v is None else v) for k, v in metrics.items()})
    try:
        return string.Formatter().vformat(template, (), view)
    except (ValueError, TypeError):
        return template
