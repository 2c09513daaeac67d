"""Load the rule tree from `rules/`: one TOML file per rule, checked as it loads.

A rule names its parent; the five roots are the bottleneck classes and carry a `score` (how much
of the step their class explains). Every condition, score and severity test is parsed with
`Expression`, and every metric it names must be in `METRICS`: a typo fails the load with the
file's name, it does not yield a rule that never fires.
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Any

import msgspec

from torchtop.analysis.metric_names import CLASSES, METRICS
from torchtop.diagnosis.expressions import Expression, ExpressionError
from torchtop.model.findings import Fix

SEVERITIES = ("low", "medium", "high")
APPLY_ROUTES = ("override", "env", "arg", "code")
VERDICT_FILE = "_verdict.toml"


class RuleError(ValueError):
    """A rule file is invalid; the message names the file."""


class Example(msgspec.Struct, frozen=True):
    expect_fire: bool
    metrics: dict[str, Any]
    note: str = ""


class Rule(msgspec.Struct, frozen=True):
    id: str
    parent: str | None
    bottleneck_class: str
    title: str
    when: Expression
    score: Expression | None
    severity: str
    severity_when: tuple[tuple[str, Expression], ...]
    message: str
    why: str
    evidence: tuple[str, ...]
    fixes: tuple[Fix, ...]
    examples: tuple[Example, ...]
    path: str


class VerdictSettings(msgspec.Struct, frozen=True):
    """When the evidence is too thin for any verdict (see rules/_verdict.toml)."""

    min_steps: int = 1
    min_score: float = 0.1
    evidence: Expression | None = None
    evidence_reason: str = ""


class RuleTree(msgspec.Struct, frozen=True):
    rules: dict[str, Rule]
    children: dict[str | None, tuple[str, ...]]
    settings: VerdictSettings = msgspec.field(default_factory=VerdictSettings)

    @property
    def roots(self) -> tuple[Rule, ...]:
        return tuple(self.rules[r] for r in self.children.get(None, ()))

    def chain(self, rule_id: str) -> tuple[str, ...]:
        chain = [rule_id]
        while (parent := self.rules[chain[-1]].parent) is not None:
            chain.append(parent)
        return tuple(reversed(chain))


def default_rules_dir() -> Path:
    """`$TORCHTOP_RULES`, else the checkout's `rules/`, else the installed copy."""
    env = os.environ.get("TORCHTOP_RULES")
    if env:
        return Path(env)
    checkout = Path(__file__).resolve().parents[3] / "rules"
    if checkout.is_dir():
        return checkout
    import sysconfig  # only an installed copy needs it (and it costs a few ms to import)

    return Path(sysconfig.get_paths()["data"]) / "share" / "torchtop" / "rules"


def load_rules(directory: Path | None = None) -> RuleTree:
    directory = directory or default_rules_dir()
    files = sorted(p for p in directory.glob("*.toml") if not p.name.startswith("_"))
    if not files:
        raise RuleError(f"{directory}: no rule files")
    rules: dict[str, Rule] = {}
    raw_class: dict[str, str | None] = {}
    for path in files:
        data = _read_toml(path)
        rule_id = str(data.get("id", ""))
        if rule_id != path.stem:
            raise RuleError(f"{path}: id {rule_id!r} must equal the file name {path.stem!r}")
        raw_class[rule_id] = data.get("class")
        rules[rule_id] = _parse_rule(path, data)
    rules = _resolve_classes(rules, raw_class)
    children: dict[str | None, list[str]] = {}
    for rule in rules.values():
        children.setdefault(rule.parent, []).append(rule.id)
    settings_path = directory / VERDICT_FILE
    settings = _parse_settings(settings_path) if settings_path.exists() else VerdictSettings()
    return RuleTree(rules, {k: tuple(v) for k, v in children.items()}, settings)


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as handle:
            return tomllib.load(handle)
    except tomllib.TOMLDecodeError as exc:
        raise RuleError(f"{path}: not valid TOML ({exc})") from None


def _expression(path: Path, text: object, what: str) -> Expression:
    if not isinstance(text, str) or not text.strip():
        raise RuleError(f"{path}: {what} must be a non-empty expression")
    try:
        expression = Expression.parse(text)
    except ExpressionError as exc:
        raise RuleError(f"{path}: {what}: {exc}") from None
    unknown = sorted(expression.names - METRICS.keys())
    if unknown:
        raise RuleError(f"{path}: {what} names unknown metric(s) {', '.join(unknown)}")
    return expression


def _parse_rule(path: Path, data: dict[str, Any]) -> Rule:
    for key in ("title", "when", "why"):
        if key not in data:
            raise RuleError(f"{path}: missing {key!r}")
    parent = data.get("parent") or None
    severity = str(data.get("severity", "medium"))
    if severity not in SEVERITIES:
        raise RuleError(f"{path}: severity must be one of {', '.join(SEVERITIES)}")
    evidence = tuple(str(name) for name in data.get("evidence", ()))
    unknown = sorted(set(evidence) - METRICS.keys())
    if unknown:
        raise RuleError(f"{path}: evidence names unknown metric(s) {', '.join(unknown)}")
    return Rule(
        id=path.stem,
        parent=parent,
        bottleneck_class=str(data.get("class") or ""),
        title=str(data["title"]),
        when=_expression(path, data["when"], "when"),
        score=_expression(path, data["score"], "score") if "score" in data else None,
        severity=severity,
        severity_when=tuple(
            (level, _expression(path, text, f"severity_when.{level}"))
            for level, text in data.get("severity_when", {}).items()
            if level in SEVERITIES
        ),
        message=str(data.get("message", "")),
        why=str(data["why"]).strip(),
        evidence=evidence,
        fixes=tuple(_parse_fix(path, f) for f in data.get("fixes", ())),
        examples=tuple(_parse_example(path, e) for e in data.get("examples", ())),
        path=str(path),
    )


def _parse_fix(path: Path, data: dict[str, Any]) -> Fix:
    apply = str(data.get("apply", ""))
    if apply not in APPLY_ROUTES or "knob" not in data:
        raise RuleError(
            f"{path}: each fix needs a knob and apply = one of {', '.join(APPLY_ROUTES)}"
        )
    return Fix(
        knob=str(data["knob"]),
        value=data.get("value"),
        apply=apply,
        description=str(data.get("description", "")).strip(),
    )


def _parse_example(path: Path, data: dict[str, Any]) -> Example:
    expect = data.get("expect")
    if expect not in ("fire", "quiet"):
        raise RuleError(f"{path}: each example needs expect = 'fire' or 'quiet'")
    metrics = dict(data.get("metrics", {}))
    unknown = sorted(set(metrics) - METRICS.keys())
    if unknown:
        raise RuleError(f"{path}: example names unknown metric(s) {', '.join(unknown)}")
    return Example(expect == "fire", metrics, str(data.get("note", "")))


def _resolve_classes(rules: dict[str, Rule], raw_class: dict[str, str | None]) -> dict[str, Rule]:
    """Roots must name a class and a score; children inherit their root's class."""
    resolved: dict[str, Rule] = {}
    for rule_id, rule in rules.items():
        seen = {rule_id}
        node = rule
        while node.parent is not None:
            if node.parent not in rules:
                raise RuleError(f"{rule.path}: parent {node.parent!r} has no rule file")
            if node.parent in seen:
                raise RuleError(f"{rule.path}: parent links form a cycle")
            seen.add(node.parent)
            node = rules[node.parent]
        cls = raw_class.get(node.id)
        if cls not in CLASSES:
            raise RuleError(f"{node.path}: a root rule needs class = one of {', '.join(CLASSES)}")
        if node.score is None:
            raise RuleError(f"{node.path}: a root rule needs a score")
        resolved[rule_id] = msgspec.structs.replace(rule, bottleneck_class=cls)
    return resolved


def _parse_settings(path: Path) -> VerdictSettings:
    data = _read_toml(path)
    evidence = data.get("evidence")
    return VerdictSettings(
        min_steps=int(data.get("min_steps", 1)),
        min_score=float(data.get("min_score", 0.1)),
        evidence=_expression(path, evidence, "evidence") if evidence else None,
        evidence_reason=str(data.get("evidence_reason", "")),
    )
