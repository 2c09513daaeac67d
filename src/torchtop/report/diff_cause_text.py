"""`diff`'s account of the change in words: the settings that differ (the first section), the
noise judgement (on the steps' line) and where the time moved, with how much of it lies in the
parts of the step the changed settings touch and how much elsewhere.
"""

from __future__ import annotations

import json

from torchtop.model.diff import DiffSection, Document
from torchtop.report.diff_noise import noise_words

NOT_RECORDED = (
    "no settings recorded (a trace has none, nor has a report saved before torchtop kept them)"
)
SETTINGS_TITLE = "settings that differ"
MOVED_TITLE = "where the time moved (ms per step)"
ANOTHER_CAUSE = "another cause, e.g. the machine's load"
FLOOR_PCT = 1.0
"""A part of the change under this share of A's step is not worth a cause."""
REST_NAMED = 2
NAMED_MIN_MS = 0.05
"""A category that moved less is not named (it would read `-0.0 ms`)."""
LOAD_RULE_WORDS = ("contention", "steal")
"""Rules that name the machine's load: the other tenants, or the hypervisor's stolen time."""


def settings_section(changes: Document) -> DiffSection:
    entries = changes.get("settings") or []
    rows = tuple((e["what"], e["name"], f"{_value(e['a'])} -> {_value(e['b'])}") for e in entries)
    recorded = changes.get("settings_recorded") or {}
    lacking = [w.upper() for w in ("a", "b") if not recorded.get(w)]
    note = None
    if lacking:
        commands = all((changes.get("inputs") or {}).get(w, {}).get("command") for w in "ab")
        note = f"{' and '.join(lacking)}: {NOT_RECORDED}"
        note += "; the command lines compared" if commands else ""
    elif not rows:
        note = "none: the command line, environment, overrides and recorded settings are the same"
    return DiffSection(SETTINGS_TITLE, ("", "setting", "A -> B"), rows, note, left=3)


def noise_note(noise: Document) -> str:
    return noise_words(noise)


def moved_section(changes: Document) -> DiffSection:
    moved = changes.get("moved") or {"available": False, "why": "not worked out"}
    if not moved["available"]:
        return DiffSection(MOVED_TITLE, note=moved["why"])
    touched = set(moved["touched"] or ())
    parts = sorted(moved["categories"].items(), key=lambda kv: -abs(kv[1]["change_ms"]))
    rows = tuple(
        (key, f"{c['a_ms']:.2f}", f"{c['b_ms']:.2f}", f"{c['change_ms']:+.2f}",
         "touched" if key in touched else "")
        for key, c in parts
        if c["a_ms"] or c["b_ms"]
    )  # fmt: skip
    header = ("category", "A", "B", "change", "")
    return DiffSection(MOVED_TITLE, header, rows, moved_words(moved, changes))


def moved_words(moved: Document, changes: Document) -> str:
    """`B's step is 13.1 ms (48.1% of A's) shorter: -14.3 ms in dataloader, which
    dataloader.num_workers touches; +1.2 ms in the rest (cpu_exec +0.9 ms)`."""
    total, pct = moved["step_change_ms"], moved["step_change_pct"]
    head = f"B's step is {abs(total):.1f} ms ({abs(pct):.1f}% of A's) "
    head += "shorter" if total < 0 else "longer"
    if (changes.get("noise") or {}).get("within_noise"):
        head += " (within noise)"
    if moved["touched"] is None:
        return f"{head}; {_listed(moved['by'])} can act on any part of the step: not split"
    rest, inside = moved["rest_change_ms"], moved["touched_change_ms"]
    if not moved["touched"]:
        named = _rest_named(moved, changes, rest, operators=True)
        if not moved["settings_known"]:
            return f"{head}: {named}; without both runs' settings, what moved it is not said"
        return f"{head}; no recorded setting differs, so it has another cause: {named}"
    outside = abs(rest) > abs(inside) and abs(rest) * 100 >= FLOOR_PCT * _a_step_ms(moved)
    words = (
        f"{head}: {inside:+.1f} ms in {_where(moved)}, which "
        f"{_listed(moved['by'])} {'touches' if len(moved['by']) == 1 else 'touch'}; "
        f"{rest:+.1f} ms in the rest "
        f"({_rest_named(moved, changes, rest, operators=outside)})"
    )
    if outside:
        words += f", which the change does not touch: {ANOTHER_CAUSE}{_load_named(changes)}"
    return words


def _load_named(changes: Document) -> str:
    """Where one side's report named other processes taking its cores (a contention finding
    that came or went between A and B), the words point at it."""
    verdict = changes.get("verdict") or {}
    said = [
        f"{which}'s report names {rule}"
        for which, key in (("A", "findings_gone"), ("B", "findings_new"))
        for rule in verdict.get(key) or []
        if any(word in rule for word in LOAD_RULE_WORDS)
    ]
    return f" ({'; '.join(said)})" if said else ""


def _where(moved: Document) -> str:
    """The touched categories that hold time on either side (a CPU job has no kernels)."""
    categories = moved["categories"]
    held = [
        k
        for k in moved["touched"]
        if k in categories and categories[k]["a_ms"] + categories[k]["b_ms"]
    ]
    return "/".join(held or moved["touched"])


def _a_step_ms(moved: Document) -> float:
    pct = moved["step_change_pct"]
    return abs(moved["step_change_ms"] / pct * 100) if pct else 0.0


def _rest_named(moved: Document, changes: Document, rest: float, operators: bool) -> str:
    """The categories outside the touched ones that moved most the rest's way, and with
    `operators` the operators whose self time moved most that way (where both sides were
    profiled; an operator's category is not known, so they are named apart)."""
    touched = set(moved["touched"] or ())
    sign = 1.0 if rest >= 0 else -1.0
    parts = [
        (key, c["change_ms"])
        for key, c in moved["categories"].items()
        if key not in touched and c["change_ms"] * sign >= NAMED_MIN_MS
    ]
    parts.sort(key=lambda kv: -abs(kv[1]))
    said = [f"{key} {change:+.1f} ms" for key, change in parts[:REST_NAMED]] or ["nothing"]
    table = changes.get("operators") or {}
    if operators and table.get("available"):
        key = table["ranked_by"]
        moving = [r for r in table["rows"] if (r["change"].get(key) or 0.0) * sign > 0]
        said += [f"{r['name']} {r['change'][key]:+.2f} ms self" for r in moving[:REST_NAMED]]
    return ", ".join(said)


def _listed(names: list[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def _value(value: object) -> str:
    if value is None:
        return "-"
    return value if isinstance(value, str) else json.dumps(value)
