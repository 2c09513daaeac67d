"""Load the rule tree from `rules/`: one TOML file per rule, checked as it loads.

A rule names its parent; the five roots are the bottleneck classes and carry `recoverable` (the
share of the step their class's fixes could recover at most) and may carry `work` (when the class
is the job's work itself rather than a stall: `gpu` on a GPU job, `cpu` on a CPU-only one); any
rule may carry its own `recoverable` when its fix recovers only part of its class. Every
condition, recoverable share and severity test is parsed with
`Expression`, and every metric it names must be in `METRICS`: a typo fails the load with the
file's name, it does not yield a rule that never fires.
"""

from __future__ import annotations

import contextlib
import os
import sys
import zlib
from collections.abc import Mapping
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


class VerdictSettings(msgspec.Struct, frozen=True):
    """When the evidence is too thin for any verdict (see rules/_verdict.toml)."""

    min_steps: int = 1
    min_recoverable_share: float = 0.1
    """A stall class is the verdict only when it could recover at least this share."""
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
    """The rule tree of `directory` (default: `default_rules_dir()`), checked.

    A tree once built is kept in the cache folder (`cache_dir()`) with the exact bytes of the
    files it was built from and a fingerprint of the code that builds it, and reused while both
    are unchanged: parsing the TOML took ~15 ms of every `analyze`, the cached tree ~2 ms."""
    directory = directory or default_rules_dir()
    files = sorted(p for p in directory.glob("*.toml") if not p.name.startswith("_"))
    if not files:
        raise RuleError(f"{directory}: no rule files")
    settings_path = directory / VERDICT_FILE
    sources = {path: _read_bytes(path) for path in files}
    settings_source = _read_bytes(settings_path) if settings_path.exists() else None
    key = (
        _code_fingerprint(),
        tuple((path.name, data) for path, data in sources.items()),
        settings_source,
    )
    cache = _cache_file(directory)
    tree = _cached(cache, key)
    if tree is None:
        tree = _build(sources, settings_path, settings_source)
        _store(cache, key, tree)
    return tree


def _build(
    sources: dict[Path, bytes], settings_path: Path, settings_source: bytes | None
) -> RuleTree:
    rules: dict[str, Rule] = {}
    raw_class: dict[str, str | None] = {}
    for path, source in sources.items():
        data = _parse_toml(path, source)
        rule_id = str(data.get("id", ""))
        if rule_id != path.stem:
            raise RuleError(f"{path}: id {rule_id!r} must equal the file name {path.stem!r}")
        raw_class[rule_id] = data.get("class")
        rules[rule_id] = _parse_rule(path, data)
    rules = _resolve_classes(rules, raw_class)
    children: dict[str | None, list[str]] = {}
    for rule in rules.values():
        children.setdefault(rule.parent, []).append(rule.id)
    settings = (
        _parse_settings(settings_path, settings_source)
        if settings_source is not None
        else VerdictSettings()
    )
    return RuleTree(rules, {k: tuple(v) for k, v in children.items()}, settings)


def _read_bytes(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise RuleError(f"{path}: {exc.strerror or exc}") from None


def _parse_toml(path: Path, source: bytes) -> dict[str, Any]:
    import tomllib  # only when the tree is built, not when the cached one is used

    try:
        return tomllib.loads(source.decode("utf-8"))
    except UnicodeDecodeError:
        raise RuleError(f"{path}: not UTF-8 text") from None
    except tomllib.TOMLDecodeError as exc:
        raise RuleError(f"{path}: not valid TOML ({exc})") from None


def cache_dir() -> Path:
    """`$TORCHTOP_CACHE_DIR`, else `$XDG_CACHE_HOME/torchtop`, else `~/.cache/torchtop`."""
    chosen = os.environ.get("TORCHTOP_CACHE_DIR")
    if chosen:
        return Path(chosen)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "torchtop"


def _cache_file(directory: Path) -> Path:
    where = os.path.realpath(directory).encode("utf-8", "surrogateescape")
    return cache_dir() / f"rules-{zlib.crc32(where):08x}.pickle"


_BUILDERS = ("diagnosis/rules.py", "diagnosis/expressions.py", "model/findings.py")
"""The code that turns rule files into the tree: a cached tree is used only while it is as it
was (a changed field order would otherwise unpickle into the wrong fields)."""


def _code_fingerprint() -> tuple[object, ...]:
    """The builders' files as they are, and the Python and msgspec that pickled the tree (one
    checkout may be used by several interpreters, whose `ast` nodes differ)."""
    package = Path(__file__).resolve().parents[1]
    stats = [os.stat(package / name) for name in _BUILDERS]
    files = tuple((stat.st_mtime_ns, stat.st_size) for stat in stats)
    return (sys.version_info[:3], msgspec.__version__, files)


def _cached(cache: Path, key: object) -> RuleTree | None:
    """The tree stored for exactly these files and code, if any; anything odd is a miss."""
    import pickle

    try:
        stored_key, tree = pickle.loads(cache.read_bytes())
    except Exception:  # missing, unreadable, truncated, from another version: build anew
        return None
    return tree if stored_key == key and isinstance(tree, RuleTree) else None


def _store(cache: Path, key: object, tree: RuleTree) -> None:
    """Keep the tree for next time; a cache folder that cannot be written is left alone."""
    import pickle

    temporary = cache.with_name(f"{cache.name}.{os.getpid()}.tmp")
    try:
        cache.parent.mkdir(parents=True, exist_ok=True)
        temporary.write_bytes(pickle.dumps((key, tree), protocol=pickle.HIGHEST_PROTOCOL))
        os.replace(temporary, cache)
    except OSError:
        with contextlib.suppress(OSError):
            temporary.unlink()


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
    if "score" in data:
        raise RuleError(f"{path}: 'score' is gone: a root says what it could recover (recoverable)")
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
        recoverable=_optional(path, data, "recoverable"),
        work=_optional(path, data, "work"),
        competes=bool(data.get("competes", True)),
        fix_when=tuple(_fix_condition(path, f) for f in data.get("fixes", ())),
    )


def _optional(path: Path, data: dict[str, Any], key: str) -> Expression | None:
    if data.get(key) is False:
        # `recoverable = false`: the breakdown cannot bound what this rule's fix recovers.
        return Expression.parse("False")
    return _expression(path, data[key], key) if key in data else None


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


def _fix_condition(path: Path, data: dict[str, Any]) -> Expression | None:
    text = data.get("when")
    return None if text is None else _expression(path, text, f"fix {data.get('knob')}: when")


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
    offers = data.get("offers")
    knobs = None if offers is None else tuple(str(knob) for knob in offers)
    return Example(expect == "fire", metrics, str(data.get("note", "")), knobs)


def _resolve_classes(rules: dict[str, Rule], raw_class: dict[str, str | None]) -> dict[str, Rule]:
    """Roots must name a class and its recoverable share; children inherit their root's class;
    only a root may say when its class is the work itself."""
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
        resolved[rule_id] = msgspec.structs.replace(rule, bottleneck_class=cls)
    return resolved


def _parse_settings(path: Path, source: bytes) -> VerdictSettings:
    data = _parse_toml(path, source)
    evidence = data.get("evidence")
    return VerdictSettings(
        min_steps=int(data.get("min_steps", 1)),
        min_recoverable_share=float(data.get("min_recoverable_share", 0.1)),
        evidence=_expression(path, evidence, "evidence") if evidence else None,
        evidence_reason=str(data.get("evidence_reason", "")),
    )
