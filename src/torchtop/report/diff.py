"""`torchtop diff A B`: the changes between two JSON reports (`torchtop.diff/1`).

Pure: two reports in the contract's JSON shape in, the `changes` out. Working on the JSON
shape, not on `Report` values, lets a saved report (`--report FILE`, `analyze --format json`) be
compared exactly as a trace analysed now. Ratios are B over A and are taken from the reports'
own rounded figures, so a reader dividing the two reports' numbers gets the same ratio.
"""

from __future__ import annotations

from torchtop.model.diff import DiffSide, Document
from torchtop.report.diff_efficiency import efficiency_change
from torchtop.report.diff_memory import memory_change
from torchtop.report.diff_moved import moved_change
from torchtop.report.diff_names import names_change
from torchtop.report.diff_noise import noise_judgement
from torchtop.report.diff_settings import settings_change, settings_recorded

SCHEMA = "torchtop.diff/1"
STEP_KEYS = ("count", "mean_ms", "p50_ms", "p95_ms", "steps_per_s")


def diff_document(a: DiffSide, b: DiffSide) -> Document:
    """The whole `diff --format json` document: both reports and the changes."""
    return {"schema": SCHEMA, "a": a.report, "b": b.report, "changes": changes(a, b)}


def changes(a: DiffSide, b: DiffSide) -> Document:
    """The settings that differ first (CONTRACT.md), then the figures that moved."""
    ra, rb = a.report, b.report
    settings = settings_change(ra, rb)
    known = settings_recorded(ra) and settings_recorded(rb)
    return {
        "settings": settings,
        "settings_recorded": {"a": settings_recorded(ra), "b": settings_recorded(rb)},
        "inputs": {"a": _input(a), "b": _input(b)},
        "steps": steps_change(ra, rb),
        "noise": noise_judgement(ra, rb),
        "moved": moved_change(ra, rb, settings, known),
        "breakdown": breakdown_change(ra, rb),
        "verdict": verdict_change(ra, rb),
        "operators": names_change(a, b, "operators"),
        "kernels": names_change(a, b, "kernels"),
        "memory": memory_change(ra, rb),
        "communication": communication_change(ra, rb),
        "efficiency": efficiency_change(ra, rb),
    }


def _input(side: DiffSide) -> Document:
    source = side.report.get("source", {})
    document = {"path": side.label, "kind": source.get("kind"), "json_report": side.from_json}
    if source.get("command"):
        document["command"] = list(source["command"])
    return document


def ratio(b: float | None, a: float | None) -> float | None:
    """B over A; None where either is missing or A is zero."""
    if a is None or b is None or a == 0:
        return None
    return b / a


def steps_change(a: Document, b: Document) -> Document:
    """Each side's step figures, and B over A for the rate and the mean step time."""
    sa, sb = a.get("steps", {}), b.get("steps", {})
    return {
        "a": {key: sa.get(key) for key in STEP_KEYS},
        "b": {key: sb.get(key) for key in STEP_KEYS},
        "steps_per_s_ratio": ratio(sb.get("steps_per_s"), sa.get("steps_per_s")),
        "mean_ms_ratio": ratio(sb.get("mean_ms"), sa.get("mean_ms")),
    }


def breakdown_change(a: Document, b: Document) -> Document:
    """Per category: A's and B's share of step time and B's minus A's; None on a side whose
    report has no breakdown (not measured, not 0)."""
    ba, bb = a.get("breakdown", {}), b.get("breakdown", {})
    keys = list(dict.fromkeys([*ba, *bb]))
    return {
        key: {
            "a": ba.get(key),
            "b": bb.get(key),
            "change": None if key not in ba or key not in bb else round(bb[key] - ba[key], 4),
        }
        for key in keys
    }


def verdict_change(a: Document, b: Document) -> Document:
    """The bottleneck on each side, whether it changed, and the findings that came or went."""
    rules_a = [f["rule"] for f in a.get("findings", [])]
    rules_b = [f["rule"] for f in b.get("findings", [])]
    return {
        "a": a.get("bottleneck"),
        "b": b.get("bottleneck"),
        "changed": a.get("bottleneck") != b.get("bottleneck"),
        "a_confidence": a.get("confidence"),
        "b_confidence": b.get("confidence"),
        "findings_new": [r for r in rules_b if r not in rules_a],
        "findings_gone": [r for r in rules_a if r not in rules_b],
    }


def communication_change(a: Document, b: Document) -> Document:
    """Collectives by kind on each side (count, time, share) and the change in time."""
    ca, cb = a.get("communication", {}), b.get("communication", {})
    document: Document = {
        "available": bool(ca or cb),
        "share": breakdown_change(a, b).get(
            "communication", {"a": None, "b": None, "change": None}
        ),
    }
    if not (ca or cb):
        document["why"] = "no collectives in either"
        return document
    document["kinds"] = {
        kind: {
            "a": _collective(ca.get(kind)),
            "b": _collective(cb.get(kind)),
            "change_ms": round(
                (cb.get(kind) or {}).get("total_ms", 0.0)
                - (ca.get(kind) or {}).get("total_ms", 0.0),
                3,
            ),
        }
        for kind in dict.fromkeys([*ca, *cb])
    }
    return document


def _collective(stat: Document | None) -> Document | None:
    if stat is None:
        return None
    return {key: stat.get(key) for key in ("count", "total_ms", "share", "bytes")}
