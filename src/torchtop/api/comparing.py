"""`compare(reports)`: many runs side by side, one DataFrame row per run.

A row holds what tells runs apart at a glance: the rate (steps/s, mean step), the step's shares
(the breakdown's categories), the verdict, and the settings a recorded run ran with (its
environment, overrides and what the agent saw: DataLoader workers, threads, precision,
compile), flattened to one column each (`env.OMP_NUM_THREADS`, `dataloader.num_workers`).
A setting one run did not record is None in its row. A report of several jobs gives a row per
job.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from torchtop.api.frames import pandas_module
from torchtop.api.report import Report
from torchtop.report.contract import BREAKDOWN_KEYS

if TYPE_CHECKING:
    import pandas

HEAD_COLUMNS = (
    "run", "source", "paths", "bottleneck", "confidence", "steps", "step_mean_ms",
    "steps_per_s", "gpu_utilization", *BREAKDOWN_KEYS,
)  # fmt: skip


def compare(reports: Iterable[Report] | Mapping[str, Report]) -> pandas.DataFrame:
    """One row per run, in the order given; the `run` column is the mapping's key, or the
    report's name (its first file). Settings columns follow the fixed ones, sorted."""
    named = reports.items() if isinstance(reports, Mapping) else ((r.name, r) for r in reports)
    rows = [
        run_row(label if len(report.jobs) == 1 else f"{label} [job {i}]", job)
        for label, report in named
        for i, job in enumerate(report.jobs, 1)
    ]
    settings = sorted({key for row in rows for key in row} - set(HEAD_COLUMNS))
    pd = pandas_module()
    return pd.DataFrame(rows, columns=[*HEAD_COLUMNS, *settings])


def run_row(label: str, report: Report) -> dict[str, Any]:
    """One run's row: figures, shares, verdict, then its settings flattened."""
    document = report.job_document()
    steps, breakdown = document.get("steps") or {}, document.get("breakdown") or {}
    row: dict[str, Any] = {
        "run": label,
        "source": document["source"].get("kind"),
        "paths": " ".join(report.paths),
        "bottleneck": document["bottleneck"],
        "confidence": document["confidence"],
        "steps": steps.get("count"),
        "step_mean_ms": steps.get("mean_ms"),
        "steps_per_s": steps.get("steps_per_s"),
        "gpu_utilization": (document.get("gpu") or {}).get("utilization"),
    }
    row |= {key: breakdown.get(key) for key in BREAKDOWN_KEYS}
    return row | settings_columns(document.get("settings") or {})


def settings_columns(settings: Mapping[str, Any]) -> dict[str, Any]:
    """`settings` flattened: nested tables as `table.key`, the script's options as
    `option.DEST`; `agent` (whether anything was seen) is kept as it is."""
    columns: dict[str, Any] = {}
    for key, value in settings.items():
        if isinstance(value, Mapping):
            columns |= {f"{key}.{name}": item for name, item in value.items()}
        elif key == "options":
            columns |= {f"option.{o['dest']}": o.get("value") for o in value or []}
        else:
            columns[key] = value
    return columns
