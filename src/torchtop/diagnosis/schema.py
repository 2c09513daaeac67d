"""What a rule file and `_verdict.toml` may say: every key, at every level, with its type.

The TOML is read into plain dicts, whose keys are checked against these Structs first (so a
misspelt `severty` is `unknown key 'severty' (did you mean 'severity'?)`, not a rule that is
silently medium), then converted by msgspec (so `title = 3` is `title: expected str, got
int`). Each problem is one line naming the file and the key; what the values mean (metrics,
knobs, severities, the tree) is checked by `diagnosis.rules`.
"""

from __future__ import annotations

import functools
import re
import types
import typing
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Annotated

import msgspec

_S = typing.TypeVar("_S", bound=msgspec.Struct)
_RETIRED = {"score": "'score' is gone: a root says what it could recover (recoverable)"}
"""Keys older rule files used, with what replaced them."""


class RuleError(ValueError):
    """A rule file is invalid; the message names the file, in one line."""


class FixEntry(msgspec.Struct, forbid_unknown_fields=True):
    """One `[[fixes]]` table."""

    knob: str
    value: str | int | float | bool
    apply: str
    description: str = ""
    when: str | None = None


class ExampleEntry(msgspec.Struct, forbid_unknown_fields=True):
    """One `[[examples]]` table: metrics on which the rule must fire, or stay quiet."""

    expect: str
    metrics: dict[str, str | int | float | bool] = {}
    note: str = ""
    offers: list[str] | None = None


class RuleFile(msgspec.Struct, forbid_unknown_fields=True):
    id: str
    title: str
    when: str
    why: str
    parent: str | None = None
    bottleneck_class: str | None = msgspec.field(name="class", default=None)
    severity: str = "medium"
    severity_when: dict[str, str] = {}
    """Level to condition, tried in the file's order; the first that holds wins."""
    message: str = ""
    evidence: list[str] = []
    recoverable: str | bool | None = None
    work: str | None = None
    competes: bool = True
    unexplained: str = ""
    """Roots only: what to record to find the cause of the class's share when no child rule
    explains it (`{unexplained_share}` is filled in)."""
    fixes: list[FixEntry] = []
    examples: list[ExampleEntry] = []


_Share = Annotated[float, msgspec.Meta(ge=0.0, le=1.0)]
_Count = Annotated[int, msgspec.Meta(ge=0)]


class Confidence(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """`[confidence]`: how the chance that more evidence keeps the verdict is computed
    (`diagnosis/confidence.py`), and the factor for evidence known to be damaged."""

    pseudo_count: Annotated[float, msgspec.Meta(gt=0.0)] = 0.5
    """Jeffreys' pseudo-count added to a share seen in single samples."""
    min_unit_spread: Annotated[float, msgspec.Meta(ge=0.0, le=1.0)] = 0.02
    """The least spread per step assumed of a margin measured over steps."""
    truncated_trace: _Share = 0.7
    set_aside_share: _Share = 0.01
    """Events set aside in reading (a field of the wrong type, an impossible time) past this
    share of those read: the evidence is damaged as a cut file's is (`truncated_trace`)."""


class RankPolicy(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """`[ranks]`: when a rank of a job with several is a straggler, and when it is silent."""

    min_steps: Annotated[int, msgspec.Meta(ge=1)] = 50
    """Fewer counted steps shared by every rank than this: no rank is called a straggler yet.
    The ranks are compared over all of their shared steps, in blocks of 10 step numbers
    (`runs.step_blocks`): each block's slowest rank is the one with the most busy time."""
    culprit_share: _Share = 0.6
    """A straggler is the slowest rank in at least this share of the blocks since it began."""
    max_chance: Annotated[float, msgspec.Meta(gt=0.0, le=1.0)] = 0.01
    """... a share that ranks alike would reach by chance (each block's slowest drawn at
    random) with at most this probability: persistence, not a lucky streak."""
    min_slower_by: Annotated[float, msgspec.Meta(ge=0.0)] = 0.1
    """And its busy time exceeds its peers' median by at least this fraction."""
    min_waited_share: _Share = 0.05
    """And its peers lose at least this share of their step waiting for it (its excess busy
    time over its step wall): a rank a little busier in a step that is mostly all-reduce holds
    no one back."""
    silent_after_s: Annotated[float, msgspec.Meta(gt=0.0)] = 5.0
    """A rank without `bye` that wrote nothing for this long while a peer (or the host
    sampler, which no longer sees its process) went on is `silent since` its last record."""


class VerdictFile(msgspec.Struct, forbid_unknown_fields=True):
    """`_verdict.toml`. The shipped file states every value (a test checks), so the shipped
    policy reads from the data; a folder without one, or a key left out, gets these."""

    min_steps: _Count = 1
    live_min_steps: _Count = 5
    """A live job's verdict waits for this many steps after the warm-up (attached without an
    agent: py-spy samples), where a trace's steps are all there will be."""
    min_recoverable_share: _Share = 0.1
    evidence: str | None = None
    evidence_reason: str = ""
    confidence: Confidence = Confidence()
    ranks: RankPolicy = RankPolicy()


def decode(path: Path, data: Mapping[str, object], schema: type[_S]) -> _S:
    """`data` as `schema`, or RuleError naming the file and the first key that is wrong."""
    problem = _unknown_key(data, schema, "")
    if problem is not None:
        raise RuleError(f"{path}: {problem}")
    try:
        return msgspec.convert(data, schema)
    except msgspec.ValidationError as exc:
        raise RuleError(f"{path}: {_explain(str(exc))}") from None


def _unknown_key(
    data: Mapping[str, object], schema: type[msgspec.Struct], where: str
) -> str | None:
    """The first key of `data` (or of a table within it) that `schema` does not name."""
    fields = _fields(schema)
    for key, value in data.items():
        if key not in fields:
            if not where and key in _RETIRED:
                return _RETIRED[key]
            return f"unknown key {where + key!r}{did_you_mean(key, fields)}"
        nested = _struct_in(fields[key])
        if nested is None:
            continue
        tables = enumerate(value) if isinstance(value, list) else [(None, value)]
        for index, table in tables:
            inner = f"{where}{key}." if index is None else f"{where}{key}[{index}]."
            problem = _unknown_key(table, nested, inner) if isinstance(table, Mapping) else None
            if problem is not None:
                return problem
    return None


@functools.cache
def _fields(schema: type[msgspec.Struct]) -> dict[str, object]:
    """Each key of `schema` and its type (resolving the types took ~0.2 ms a call)."""
    return {field.encode_name: field.type for field in msgspec.structs.fields(schema)}


def _struct_in(annotation: object) -> type[msgspec.Struct] | None:
    """The Struct a field holds (itself, in a list, or in an optional), if any."""
    if isinstance(annotation, type) and issubclass(annotation, msgspec.Struct):
        return annotation
    if typing.get_origin(annotation) in (list, typing.Union, types.UnionType):
        for argument in typing.get_args(annotation):
            found = _struct_in(argument)
            if found is not None:
                return found
    return None


def did_you_mean(key: str, known: Iterable[str]) -> str:
    """` (did you mean X?)` for the closest of `known`, or nothing."""
    import difflib  # only when a file is wrong

    close = difflib.get_close_matches(key, list(known), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


_AT = re.compile(r"^(?P<what>.*?)(?: - at `\$\.?(?P<key>[^`]*)`)?$")
_MISSING = re.compile(r"^Object missing required field `(?P<field>[^`]+)`$")


def _explain(message: str) -> str:
    """msgspec's `Expected `str`, got `int` - at `$.title`` as `title: expected str, got int`."""
    match = _AT.match(message)
    what, key = (match["what"], match["key"] or "") if match else (message, "")
    missing = _MISSING.match(what)
    if missing:
        return f"missing key {(key + '.' if key else '') + missing['field']!r}"
    what = what.replace("`", "")
    return f"{key}: {what[:1].lower()}{what[1:]}" if key else what
