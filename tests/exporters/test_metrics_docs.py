"""docs/prometheus.md lists exactly the metrics the code exposes; the Grafana dashboard queries
only those, with their labels."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from torchtop.exporters.metrics import METRICS

DOCS = Path(__file__).resolve().parents[2] / "docs"
TABLE_ROW = re.compile(r"^\| `(torchtop_[a-z0-9_]+)` \| (\w+) \| ([a-z, ]+) \|", re.MULTILINE)
SELECTOR = re.compile(r"\b(torchtop_[a-z0-9_]+)(?:\{([^}]*)\})?")
SUMMARY_SUFFIXES = ("_sum", "_count")


def _queries(node: Any) -> Iterator[str]:
    """Every PromQL string of the dashboard: panel targets' `expr`, variables' `query`."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ("expr", "query", "definition") and isinstance(value, str):
                yield value
            else:
                yield from _queries(value)
    elif isinstance(node, list):
        for item in node:
            yield from _queries(item)


def _base(name: str) -> str:
    for suffix in SUMMARY_SUFFIXES:
        stem = name.removesuffix(suffix)
        if stem != name and METRICS.get(stem) is not None and METRICS[stem].kind == "summary":
            return stem
    return name


def test_the_metric_table_lists_every_exposed_metric_with_its_type_and_labels() -> None:
    rows = TABLE_ROW.findall((DOCS / "prometheus.md").read_text(encoding="utf-8"))
    documented = {
        name: (kind, tuple(label.strip() for label in labels.split(",")))
        for name, kind, labels in rows
    }
    assert set(documented) == set(METRICS)
    for name, spec in METRICS.items():
        assert documented[name] == (spec.kind, spec.labels), name


def test_every_metric_the_grafana_dashboard_queries_exists_with_the_labels_it_selects() -> None:
    dashboard = json.loads((DOCS / "grafana-dashboard.json").read_text(encoding="utf-8"))
    queries = list(_queries(dashboard))
    used: set[str] = set()
    for query in queries:
        for name, selector in SELECTOR.findall(query):
            base = _base(name)
            assert base in METRICS, (name, query)
            used.add(base)
            selected = {part.split("=")[0].strip(" !~") for part in selector.split(",") if part}
            assert selected <= set(METRICS[base].labels), (name, selected)
    # The dashboard shows every family: step time, rates, breakdown, verdict and the GPU panels.
    assert used == set(METRICS)
