"""Text for `torchtop rules`: the tree at a glance, or one rule in full."""

from __future__ import annotations

from torchtop.diagnosis.rules import RuleTree


def describe_tree(tree: RuleTree) -> str:
    lines = [f"{len(tree.rules)} rules; the roots are the bottleneck classes.", ""]

    def walk(rule_id: str, depth: int) -> None:
        rule = tree.rules[rule_id]
        indent = "  " * depth
        tag = f"[{rule.bottleneck_class}]" if rule.parent is None else f"({rule.severity})"
        lines.append(f"{indent}{rule.id:<{34 - len(indent)}} {tag:<15} {rule.title}")
        for child in sorted(tree.children.get(rule_id, ())):
            walk(child, depth + 1)

    for root in sorted(r.id for r in tree.roots):
        walk(root, 0)
    settings = tree.settings
    lines += [
        "",
        "Verdict: the stall class that could recover the largest share of the step"
        f" (at least {settings.min_recoverable_share:.0%}), else the class that is the job's"
        f" work (gpu, or cpu on a CPU-only job); unknown with fewer than {settings.min_steps}"
        " step(s)" + (f" or unless `{settings.evidence.text}`." if settings.evidence else "."),
    ]
    return "\n".join(lines) + "\n"


def describe_rule(tree: RuleTree, rule_id: str) -> str:
    rule = tree.rules[rule_id]
    lines = [
        f"{rule.id}: {rule.title}",
        f"  class     {rule.bottleneck_class}",
        f"  chain     {' > '.join(tree.chain(rule.id))}",
        f"  when      {rule.when.text}",
    ]
    if rule.recoverable is not None:
        bound = rule.recoverable.text
        lines.append(
            f"  recovers  {'no model (recoverable = false)' if bound == 'False' else bound}"
        )
    if rule.work is not None:
        lines.append(f"  work when {rule.work.text}")
    lines.append(f"  severity  {rule.severity}")
    lines += [f"            {level} when {test.text}" for level, test in rule.severity_when]
    if rule.message:
        lines.append(f"  message   {rule.message}")
    children = tree.children.get(rule.id, ())
    if children:
        lines.append(f"  children  {', '.join(sorted(children))}")
    lines += ["", "  why", *[f"    {line}" for line in rule.why.splitlines()]]
    if rule.fixes:
        lines += ["", "  fixes"]
        conditions = rule.fix_when or (None,) * len(rule.fixes)
        lines += [
            f"    {f.knob} = {f.value}  [{f.apply}]  {f.description}"
            + (f"  (only when {when.text})" if when is not None else "")
            for f, when in zip(rule.fixes, conditions, strict=True)
        ]
    if rule.examples:
        lines += ["", "  examples"]
        for example in rule.examples:
            lines.append(f"    {'fires' if example.expect_fire else 'quiet'}: {example.metrics}")
    lines.append(f"\n  file      {rule.path}")
    return "\n".join(lines) + "\n"


def tree_json(tree: RuleTree) -> dict[str, object]:
    """`torchtop rules --format json`: every rule as `rule_json` gives it, roots first, and the
    verdict settings' thresholds."""
    ordered = sorted(tree.rules.values(), key=lambda r: (r.parent is not None, r.id))
    settings = tree.settings
    return {
        "rules": [rule_json(tree, rule.id) for rule in ordered],
        "verdict": {
            "min_recoverable_share": settings.min_recoverable_share,
            "min_steps": settings.min_steps,
            "evidence": settings.evidence.text if settings.evidence else None,
        },
    }


def rule_json(tree: RuleTree, rule_id: str) -> dict[str, object]:
    """One rule as data: the fields `describe_rule` prints, expressions as their text."""
    rule = tree.rules[rule_id]
    conditions = rule.fix_when or (None,) * len(rule.fixes)
    return {
        "id": rule.id,
        "parent": rule.parent,
        "class": rule.bottleneck_class,
        "title": rule.title,
        "chain": list(tree.chain(rule.id)),
        "when": rule.when.text,
        "severity": rule.severity,
        "severity_when": [[level, test.text] for level, test in rule.severity_when],
        "message": rule.message,
        "why": rule.why,
        "evidence": list(rule.evidence),
        "fixes": [
            {
                "knob": fix.knob,
                "value": fix.value,
                "apply": fix.apply,
                "description": fix.description,
                "when": when.text if when is not None else None,
            }
            for fix, when in zip(rule.fixes, conditions, strict=True)
        ],
        "children": sorted(tree.children.get(rule.id, ())),
        "path": rule.path,
    }
