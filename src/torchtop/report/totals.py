"""The report's `totals`: every operator and kernel name with its calls in the steps.

Added to the JSON report (fields may be added) so that `diff` can compare two saved reports as
it compares two traces; the text report keeps to the top lists.
"""

from __future__ import annotations

from torchtop.model.analysis import NameTotal, NameTotals


def totals_json(totals: NameTotals) -> dict[str, object]:
    """`{"steps": N, "operators": [...], "kernels": [...]}`, each entry `name`, `count`,
    `total_us` (summed durations) and, for operators, `self_us`; the longest first."""
    return {
        "steps": totals.steps,
        "operators": [_entry(o) for o in totals.operators],
        "kernels": [_entry(k) for k in totals.kernels],
    }


def _entry(item: NameTotal) -> dict[str, object]:
    entry: dict[str, object] = {
        "name": item.name,
        "count": item.count,
        "total_us": round(item.total_us, 3),
    }
    if item.self_us is not None:
        entry["self_us"] = round(item.self_us, 3)
    return entry
