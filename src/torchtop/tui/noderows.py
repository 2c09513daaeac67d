"""Each node of a shared run as one row of the dashboard's nodes panel, built off the UI thread.

A row holds the node's NEWEST counters (its own launcher's host and GPU samples: what it does
now, where the report's `nodes` holds the run's means), its ranks and their step rate from the
report, and how its launcher's job ended. A run of one launcher has no rows, and the panel
stays hidden.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from torchtop.model.report import Report
from torchtop.runs.state import RunState
from torchtop.tui.charts import number


@dataclass(frozen=True)
class NodeRow:
    name: str
    ranks: tuple[int | None, ...]
    cpu_pct: float | None = None
    mem_used_bytes: float | None = None
    gpu_util_pct: float | None = None
    """The mean of its devices' utilisation in its newest GPU sample."""
    steps_per_s: float | None = None
    """The median of its ranks' rates (synchronised ranks share one)."""
    ended: str | None = None


def node_rows(state: RunState, report: Report) -> tuple[NodeRow, ...]:
    rates: dict[str, list[float]] = {}
    for item in report.ranks:
        rate = number(item.analysis.metrics.get("steps_per_s"))
        if item.node is not None and rate is not None:
            rates.setdefault(item.node, []).append(rate)
    return tuple(
        _row(name, node, rates.get(name, [])) for name, node in sorted(state.nodes.items())
    )


def _row(name: str, node: RunState, rates: list[float]) -> NodeRow:
    host = node.samples.host[-1] if node.samples.host else None
    gpu = node.samples.gpu[-1] if node.samples.gpu else None
    utilisation = [
        float(d.utilization_gpu_pct)
        for d in (gpu.devices if gpu is not None else [])
        if d.utilization_gpu_pct is not None
    ]
    return NodeRow(
        name=name,
        ranks=tuple(p.rank for p in node.training_processes),
        cpu_pct=number(host.cpu_pct) if host is not None else None,
        mem_used_bytes=number(host.mem_used_bytes) if host is not None else None,
        gpu_util_pct=statistics.fmean(utilisation) if utilisation else None,
        steps_per_s=statistics.median(rates) if rates else None,
        ended=node.exit.how if node.exit is not None else None,
    )
