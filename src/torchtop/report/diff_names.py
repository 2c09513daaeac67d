"""`diff`'s operators and kernels: every name in either report's `totals`, per step, with its
change, the largest change first; names as the analysis keys them.

Operators are ranked by the change in their self time (a parent's time is its children's too,
and would count every change twice); kernels by the change in their time. Each row keeps the
raw totals beside the per-step figures, so the change can be held against HTA's `TraceDiff`.
"""

from __future__ import annotations

from torchtop.model.diff import DiffSide, Document

NOT_IN_JSON = "not in a JSON report"


def names_change(a: DiffSide, b: DiffSide, kind: str) -> Document:
    """`kind` is `operators` or `kernels`; unavailable, with why, when a side has no totals."""
    totals_a, totals_b = a.report.get("totals"), b.report.get("totals")
    if totals_a is None or totals_b is None:
        return {"available": False, "why": _missing(a, b)}
    steps_a, steps_b = totals_a["steps"], totals_b["steps"]
    rows_a = {item["name"]: item for item in totals_a[kind]}
    rows_b = {item["name"]: item for item in totals_b[kind]}
    ranked_by = "self_ms_per_step" if kind == "operators" else "ms_per_step"
    rows = [
        _row(name, rows_a.get(name), rows_b.get(name), steps_a, steps_b)
        for name in dict.fromkeys([*rows_a, *rows_b])
    ]
    rows.sort(key=lambda r: -abs(_time_change(r, ranked_by)))
    return {
        "available": True,
        "steps": {"a": steps_a, "b": steps_b},
        "ranked_by": ranked_by,
        "new": [r["name"] for r in rows if r["status"] == "new"],
        "gone": [r["name"] for r in rows if r["status"] == "gone"],
        "rows": rows,
    }


def _missing(a: DiffSide, b: DiffSide) -> str:
    """Why a side has no totals: a saved JSON report without them (written before torchtop
    kept them), or a source that recorded no profiler trace (a run's step timing alone)."""
    lacking = [(w, s) for w, s in (("A", a), ("B", b)) if s.report.get("totals") is None]
    saved = [f"{w}: {s.label}" for w, s in lacking if s.from_json]
    if saved:
        return f"{NOT_IN_JSON} ({', '.join(saved)} has no per-name totals)"
    which = " and ".join(w for w, _ in lacking)
    return f"{which}: no profiler trace to count them in (a run's steps are timed without one)"


def _row(name: str, a: Document | None, b: Document | None, steps_a: int, steps_b: int) -> Document:
    status = "new" if a is None else "gone" if b is None else "both"
    side_a, side_b = _per_step(a, steps_a), _per_step(b, steps_b)
    return {
        "name": name,
        "status": status,
        "a": side_a,
        "b": side_b,
        "change": {
            key: round((side_b or {}).get(key, 0.0) - (side_a or {}).get(key, 0.0), 6)
            for key in (side_a or side_b or {})
            if key not in ("count", "total_us", "self_us")
        },
    }


def _per_step(item: Document | None, steps: int) -> Document | None:
    if item is None:
        return None
    per = max(steps, 1)
    figures: Document = {
        "count": item["count"],
        "total_us": item["total_us"],
        "count_per_step": round(item["count"] / per, 6),
        "ms_per_step": round(item["total_us"] / per / 1000.0, 6),
    }
    if item.get("self_us") is not None:
        figures["self_us"] = item["self_us"]
        figures["self_ms_per_step"] = round(item["self_us"] / per / 1000.0, 6)
    return figures


def _time_change(row: Document, key: str) -> float:
    before = (row["a"] or {}).get(key, 0.0) or 0.0
    after = (row["b"] or {}).get(key, 0.0) or 0.0
    return float(after - before)
