"""Load the rule tree from `rules/`: one TOML file per rule, checked as it loads.

A rule names its parent; the five roots are the bottleneck classes and carry `recoverable` (the
share of the step their class's fixes could recover at most) and may carry `work` (when the class
is the job's work itself rather than a stall: `gpu` on a GPU job, `cpu` on a CPU-only one); any
rule may carry its own `recoverable` when its fix recovers only part of its class.

Nothing wrong loads. Every key of a file is checked against `diagnosis.schema` (a misspelt
`severty` fails, it does not leave the rule medium); every condition, recoverable share and
severity test is parsed with `Expression`, and every metric it names must be in `METRICS`;
severities must be known levels; every fix is checked against the knob catalogue
(`diagnosis.fix_check`). Each problem fails the load with one line naming the file and the key.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path

import msgspec

from torchtop.analysis.datafile import parse_toml
from torchtop.analysis.metric_names import CLASSES, METRICS
from torchtop.diagnosis import rule_cache
from torchtop.diagnosis.expressions import Expression, ExpressionError
from torchtop.diagnosis.fix_check import fix_problem
from torchtop.diagnosis.schema import (
    Confidence,
    ExampleEntry,
    FixEntry,
    RankPolicy,
    RuleFile,
    VerdictFile,
    decode,
)
from torchtop.diagnosis.schema import RuleError as RuleError
from torchtop.model.findings import Fix

SEVERITIES = ("low", "medium", "high")
VERDICT_FILE = "_verdict.toml"


class Example(msgspec.Struct, frozen=True):
    expect_fire: bool
    metrics: dict[str, str | int | float | bool]
    note: str = ""
    offers: tuple[str, ...] | None = None
    """Where given: the knobs of the fixes offered on these metrics, in order."""


class Rule(msgspec.Struct, frozen=True):
    id: str
    parent: str | None
    bottleneck_class: str
    title: str
    when: Expression
    severity: str
    severity_when: tuple[tuple[str, Expression], ...]
    message: str
    why: str
    evidence: tuple[str, ...]
    fixes: tuple[Fix, ...]
    examples: tuple[Example, ...]
    path: str
    recoverable: Expression | None = None
    """The share of step time (0-1) this rule's fixes could recover at most; a root's is its
    class's; a child without one takes its class's."""
    work: Expression | None = None
    """Roots only: holds when this class is the job's work itself rather than a stall."""
    competes: bool = True
    """Roots only: whether the class's recoverable share competes for the verdict even when
    the class is the work (a CPU job's time between operators does; the gpu class's share is
    a bound on making the work faster, not time a stall takes, so it does not)."""
    fix_when: tuple[Expression | None, ...] = ()
    """Each fix's own condition (`when` in its `[[fixes]]` table), None where it has none."""
    unexplained: str = ""
    """Roots only: what the report says, and what to record, when no child rule explains the
    class's share."""


class VerdictSettings(msgspec.Struct, frozen=True):
    """When the evidence is too thin for any verdict, and how thin evidence lowers confidence
    (rules/_verdict.toml; `diagnosis.schema.VerdictFile` says what each value means)."""

    min_steps: int
    live_min_steps: int
    min_recoverable_share: float
    """A stall class is the verdict only when it could recover at least this share."""
    evidence: Expression | None
    evidence_reason: str
    confidence: Confidence
    ranks: RankPolicy = RankPolicy()
    """Stragglers and silent ranks of a job with several (`assess.ranks`)."""


class RuleTree(msgspec.Struct, frozen=True):
    rules: dict[str, Rule]
    children: dict[str | None, tuple[str, ...]]
    settings: VerdictSettings

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
    return shipped_rules_dir()


def shipped_rules_dir() -> Path:
    """The checkout's `rules/`, else the installed copy: beside the package where
    `pip install --target DIR` put it (DIR/share), else under the interpreter's data prefix (a
    venv or system install), else under the user base (`pip install --user`). The prefix's
    folder is named (in the error) when none holds it."""
    package = Path(__file__).resolve().parents[1]
    checkout = package.parents[1] / "rules"
    if checkout.is_dir():
        return checkout
    import sysconfig  # only an installed copy needs it (and it costs a few ms to import)

    shipped = ("share", "torchtop", "rules")
    prefix = Path(sysconfig.get_paths()["data"]).joinpath(*shipped)
    user = Path(sysconfig.get_paths(sysconfig.get_preferred_scheme("user"))["data"])
    places = (package.parent.joinpath(*shipped), prefix, user.joinpath(*shipped))
    return next((place for place in places if place.is_dir()), prefix)


def load_rules(directory: Path | None = None) -> RuleTree:
    """The rule tree of `directory` (default: `default_rules_dir()`), checked.

    A tree once built is kept (`rule_cache`) with the exact bytes of the files it was built
    from, and reused while they and everything that checks them are unchanged."""
    directory = directory or default_rules_dir()
    files = sorted(p for p in directory.glob("*.toml") if not p.name.startswith("_"))
    if not files:
        raise RuleError(f"{directory}: no rule files")
    settings_path = directory / VERDICT_FILE
    sources = {path: _read_bytes(path) for path in files}
    settings_source = _read_bytes(settings_path) if settings_path.exists() else None
    key = (
        rule_cache.code_fingerprint(),
        tuple((path.name, data) for path, data in sources.items()),
        settings_source,
    )
    cache = rule_cache.cache_file(directory)
    tree = rule_cache.cached(cache, key)
    if not isinstance(tree, RuleTree):
        tree = _build(sources, settings_path, settings_source)
        rule_cache.store(cache, key, tree)
    return tree


def _build(
    sources: dict[Path, bytes], settings_path: Path, settings_source: bytes | None
) -> RuleTree:
    rules: dict[str, Rule] = {}
    raw_class: dict[str, str | None] = {}
    for path, source in sources.items():
        entry = decode(path, _parse_toml(path, source), RuleFile)
        if entry.id != path.stem:
            raise RuleError(f"{path}: id {entry.id!r} must equal the file name {path.stem!r}")
        raw_class[entry.id] = entry.bottleneck_class
        rules[entry.id] = _parse_rule(path, entry)
    rules = _resolve_classes(rules, raw_class)
    children: dict[str | None, list[str]] = {}
    for rule in rules.values():
        children.setdefault(rule.parent, []).append(rule.id)
    settings = (
        decode(settings_path, _parse_toml(settings_path, settings_source), VerdictFile)
        if settings_source is not None
        else VerdictFile()
    )
    return RuleTree(
        rules, {k: tuple(v) for k, v in children.items()}, _settings(settings_path, settings)
    )


def _read_bytes(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise RuleError(f"{path}: {exc.strerror or exc}") from None


def _parse_toml(path: Path, source: bytes) -> dict[str, object]:
    return parse_toml(path, source, RuleError)


def _expression(path: Path, text: object, what: str) -> Expression:
    if not isinstance(text, str) or not text.strip():
        raise RuleError(f"{path}: {what} must be a non-empty expression")
    try:
        expression = Expression.parse(text)
    except ExpressionError as exc:
        raise RuleError(f"{path}: {what}: {exc}") from None
    _known_metrics(path, expression.names, what)
    return expression


def _known_metrics(path: Path, names: Iterable[str], what: str) -> None:
    unknown = sorted(set(names) - METRICS.keys())
    if unknown:
        raise RuleError(f"{path}: {what} names unknown metric(s) {', '.join(unknown)}")


def _severity(path: Path, level: str, what: str) -> str:
    if level not in SEVERITIES:
        raise RuleError(
            f"{path}: {what}: unknown severity {level!r} (one of {', '.join(SEVERITIES)})"
        )
    return level


def _parse_rule(path: Path, entry: RuleFile) -> Rule:
    _known_metrics(path, entry.evidence, "evidence")
    fixes = tuple(_parse_fix(path, f"fixes[{n}]", fix) for n, fix in enumerate(entry.fixes))
    knobs = {fix.knob for fix in fixes}
    return Rule(
        id=path.stem,
        parent=entry.parent or None,
        bottleneck_class=entry.bottleneck_class or "",
        title=entry.title,
        when=_expression(path, entry.when, "when"),
        severity=_severity(path, entry.severity, "severity"),
        severity_when=tuple(
            (
                _severity(path, level, f"severity_when.{level}"),
                _expression(path, text, f"severity_when.{level}"),
            )
            for level, text in entry.severity_when.items()
        ),
        message=entry.message,
        why=entry.why.strip(),
        evidence=tuple(entry.evidence),
        fixes=fixes,
        examples=tuple(
            _parse_example(path, f"examples[{n}]", example, knobs)
            for n, example in enumerate(entry.examples)
        ),
        path=str(path),
        recoverable=_optional(path, entry.recoverable, "recoverable"),
        work=_optional(path, entry.work, "work"),
        competes=entry.competes,
        unexplained=entry.unexplained.strip(),
        fix_when=tuple(
            None if fix.when is None else _expression(path, fix.when, f"fixes[{n}].when")
            for n, fix in enumerate(entry.fixes)
        ),
    )


def _optional(path: Path, value: str | bool | None, key: str) -> Expression | None:
    if value is False:
        # `recoverable = false`: the breakdown cannot bound what this rule's fix recovers.
        return Expression.parse("False")
    return None if value is None else _expression(path, value, key)


def offered_fixes(rule: Rule, metrics: Mapping[str, object]) -> tuple[Fix, ...]:
    """The rule's fixes that fit the job: those without a `when`, and those whose `when` holds.

    A condition on a metric that was not measured does not hold, so a fix that needs a
    property of the machine (an Ampere GPU, Intel's OpenMP) is offered only where it is known."""
    conditions = rule.fix_when or (None,) * len(rule.fixes)
    return tuple(
        fix
        for fix, condition in zip(rule.fixes, conditions, strict=True)
        if condition is None or condition.holds(metrics)
    )


def _parse_fix(path: Path, where: str, entry: FixEntry) -> Fix:
    problem = fix_problem(entry)
    if problem is not None:
        raise RuleError(f"{path}: {where}.{problem}")
    return Fix(
        knob=entry.knob, value=entry.value, apply=entry.apply, description=entry.description.strip()
    )


def _parse_example(path: Path, where: str, entry: ExampleEntry, knobs: set[str]) -> Example:
    if entry.expect not in ("fire", "quiet"):
        raise RuleError(f"{path}: {where}.expect must be 'fire' or 'quiet'")
    _known_metrics(path, entry.metrics, f"{where}.metrics")
    offers = None if entry.offers is None else tuple(entry.offers)
    strangers = sorted(set(offers or ()) - knobs)
    if strangers:
        raise RuleError(
            f"{path}: {where}.offers names {', '.join(strangers)}, not a knob of this rule's fixes"
        )
    return Example(entry.expect == "fire", dict(entry.metrics), entry.note, offers)


def _resolve_classes(rules: dict[str, Rule], raw_class: dict[str, str | None]) -> dict[str, Rule]:
    """Roots must name a class and its recoverable share; children inherit their root's class
    (and may not name one); only a root may say when its class is the work itself."""
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
        if node.recoverable is None:
            raise RuleError(f"{node.path}: a root rule needs recoverable (an expression)")
        if rule.parent is not None and rule.work is not None:
            raise RuleError(f"{rule.path}: only a root rule may say when its class is the work")
        if rule.parent is not None and raw_class.get(rule_id) is not None:
            raise RuleError(f"{rule.path}: class: only a root rule names its class")
        resolved[rule_id] = msgspec.structs.replace(rule, bottleneck_class=cls)
    return resolved


def _settings(path: Path, entry: VerdictFile) -> VerdictSettings:
    return VerdictSettings(
        min_steps=entry.min_steps,
        live_min_steps=entry.live_min_steps,
        min_recoverable_share=entry.min_recoverable_share,
        evidence=_expression(path, entry.evidence, "evidence") if entry.evidence else None,
        evidence_reason=entry.evidence_reason,
        confidence=entry.confidence,
        ranks=entry.ranks,
    )
