"""`Report.frame(name)`: one table of a JSON report as a pandas DataFrame.

Each table is read from the JSON document, not from the analysis, so a report loaded from a
saved file gives the same tables. The columns are fixed per table (docs/api.md): a report that
lacks a part (no GPU memory recorded, no shapes for efficiency) gives an empty table with the
same columns, and a field a source did not record is None (NaN in a float column), never 0.
pandas is optional and imported only here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal

from torchtop.report.contract import BREAKDOWN_KEYS

if TYPE_CHECKING:
    import pandas

FrameName = Literal["operators", "kernels", "steps", "findings", "ranks", "memory", "efficiency"]
Row = dict[str, Any]
Document = dict[str, Any]

NEEDS_PANDAS = (
    "torchtop: Report.frame and compare need pandas, which is not installed: pip install pandas"
)


def pandas_module() -> Any:
    """pandas, or one ImportError that names it and how to get it."""
    try:
        import pandas
    except ImportError:
        raise ImportError(NEEDS_PANDAS) from None
    return pandas


def report_frame(document: Document, name: str) -> pandas.DataFrame:
    """The table `name` of one job's JSON report."""
    if name not in TABLES:
        raise ValueError(f"no table {name!r}: one of {', '.join(TABLES)}")
    columns, rows = TABLES[name]
    pd = pandas_module()
    return pd.DataFrame(rows(document), columns=list(columns))


def _operators(document: Document) -> list[Row]:
    """Every operator name (`totals`), or the top list where a report has no totals."""
    totals = document.get("totals") or {}
    steps = totals.get("steps")
    entries = totals.get("operators") or document.get("top_ops") or []
    return [_named_row(e, steps) | {"self_us": e.get("self_us")} for e in entries]


def _kernels(document: Document) -> list[Row]:
    totals = document.get("totals") or {}
    steps = totals.get("steps")
    return [
        _named_row(e, steps) for e in totals.get("kernels") or document.get("top_kernels") or []
    ]


def _named_row(entry: Row, steps: int | None) -> Row:
    total = entry.get("total_us")
    per_step = total / steps if steps and isinstance(total, int | float) else None
    return {"name": entry["name"], "count": entry.get("count"), "total_us": total,
            "per_step_us": per_step}  # fmt: skip


def _steps(document: Document) -> list[Row]:
    return [
        {"step": s.get("step"), "duration_ms": s.get("duration_ms"), "profiled": s.get("profiled")}
        | {key: (s.get("breakdown") or {}).get(key) for key in BREAKDOWN_KEYS}
        for s in document["steps"].get("per_step") or []
    ]


def _findings(document: Document) -> list[Row]:
    return [
        {
            "rule": f["rule"],
            "class": f.get("class"),
            "severity": f.get("severity"),
            "title": f.get("title"),
            "message": f.get("message"),
            "predicted_gain": f.get("predicted_gain"),
            "fixes": "; ".join(fix_text(x) for x in f.get("fixes") or []),
        }
        for f in document.get("findings") or []
    ]


def fix_text(fix: Row) -> str:
    """A fix in one phrase: `dataloader.num_workers = 4 (override)`."""
    return f"{fix.get('knob')} = {fix.get('value')} ({fix.get('apply')})"


def _ranks(document: Document) -> list[Row]:
    return [
        {
            "rank": r.get("rank"),
            "label": r.get("label"),
            "node": r.get("node"),
            "bottleneck": r.get("bottleneck"),
            "confidence": r.get("confidence"),
            "steps": r["steps"].get("count"),
            "mean_ms": r["steps"].get("mean_ms"),
            "steps_per_s": r["steps"].get("steps_per_s"),
            "straggler": r.get("straggler"),
            "slower_by": r.get("slower_by"),
        }
        | {key: (r.get("breakdown") or {}).get(key) for key in BREAKDOWN_KEYS}
        for r in document.get("ranks") or []
    ]


MEMORY_COLUMNS = (
    "device", "rank", "peak_allocated_bytes", "peak_reserved_bytes", "peak_step", "peak_phase",
    "capacity_bytes", "headroom_bytes", "persistent_bytes", "source",
)  # fmt: skip


def _memory(document: Document) -> list[Row]:
    return [{key: d.get(key) for key in MEMORY_COLUMNS} for d in document.get("memory") or []]


EFFICIENCY_COLUMNS = (
    "name", "family", "dtype", "input_dims", "calls", "flops", "bytes", "time_us", "tflops_s",
    "tb_s", "intensity", "bound", "roofline_fraction",
)  # fmt: skip


def _efficiency(document: Document) -> list[Row]:
    ops = (document.get("efficiency") or {}).get("ops") or []
    return [{key: op.get(key) for key in EFFICIENCY_COLUMNS} for op in ops]


TABLES: dict[str, tuple[tuple[str, ...], Callable[[Document], list[Row]]]] = {
    "operators": (("name", "count", "total_us", "self_us", "per_step_us"), _operators),
    "kernels": (("name", "count", "total_us", "per_step_us"), _kernels),
    "steps": (("step", "duration_ms", "profiled", *BREAKDOWN_KEYS), _steps),
    "findings": (
        ("rule", "class", "severity", "title", "message", "predicted_gain", "fixes"),
        _findings,
    ),
    "ranks": (
        (
            "rank",
            "label",
            "node",
            "bottleneck",
            "confidence",
            "steps",
            "mean_ms",
            "steps_per_s",
            "straggler",
            "slower_by",
            *BREAKDOWN_KEYS,
        ),
        _ranks,
    ),
    "memory": (MEMORY_COLUMNS, _memory),
    "efficiency": (EFFICIENCY_COLUMNS, _efficiency),
}
"""Each table's columns, in order, and how its rows are read from the JSON report."""
