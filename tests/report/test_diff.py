"""`diff`'s comparison on the shared ResNet-50 num_workers 0/4 twins: the step ratio is the two
reports' own, and the operator and kernel deltas are HTA's `TraceDiff` on the same pair
(`data/hta_trace_diff_resnet50.json`, made by `data/hta_trace_diff.py`, which says how)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import RESNET_NW0, RESNET_NW4, analyze_json
from torchtop.model.diff import DiffSide
from torchtop.report.diff import changes
from torchtop.report.diff_names import NOT_IN_JSON

HTA_REFERENCE = Path(__file__).parent / "data" / "hta_trace_diff_resnet50.json"


@pytest.fixture(scope="module")
def twins(shared: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    return analyze_json(shared / RESNET_NW0), analyze_json(shared / RESNET_NW4)


@pytest.fixture(scope="module")
def twin_changes(twins: tuple[dict[str, Any], dict[str, Any]]) -> dict[str, Any]:
    a, b = twins
    return changes(DiffSide(a, "nw0"), DiffSide(b, "nw4"))


def test_the_steps_per_s_ratio_is_exactly_the_two_reports_own(
    twins: tuple[dict[str, Any], dict[str, Any]], twin_changes: dict[str, Any]
) -> None:
    a, b = twins
    steps = twin_changes["steps"]
    assert steps["steps_per_s_ratio"] == b["steps"]["steps_per_s"] / a["steps"]["steps_per_s"]
    assert steps["mean_ms_ratio"] == b["steps"]["mean_ms"] / a["steps"]["mean_ms"]
    # More DataLoader workers made the twin faster: the ratio says so, not a flat 1.
    assert steps["steps_per_s_ratio"] > 1.2


def test_each_share_change_is_b_minus_a_and_the_verdict_moves_off_the_dataloader(
    twins: tuple[dict[str, Any], dict[str, Any]], twin_changes: dict[str, Any]
) -> None:
    a, b = twins
    for key, share in twin_changes["breakdown"].items():
        assert share["a"] == a["breakdown"][key] and share["b"] == b["breakdown"][key]
        assert share["change"] == pytest.approx(b["breakdown"][key] - a["breakdown"][key])
    verdict = twin_changes["verdict"]
    assert (verdict["a"], verdict["changed"]) == ("dataloader", True)
    assert "dataloader-starved" in verdict["findings_gone"]


def hta_rows(kind: str) -> dict[str, dict[str, float]]:
    """HTA's rows of `kind`, less the ProfilerStep#N ranges (steps, not operators, to torchtop)."""
    rows = json.loads(HTA_REFERENCE.read_text())[kind]
    return {name: row for name, row in rows.items() if not name.startswith("ProfilerStep#")}


@pytest.mark.parametrize("kind", ["operators", "kernels"])
def test_operator_and_kernel_deltas_agree_with_htas_trace_diff(
    twin_changes: dict[str, Any], kind: str
) -> None:
    names = twin_changes[kind]
    assert names["available"] and names["steps"] == {"a": 6, "b": 6}
    ours = {row["name"]: row for row in names["rows"]}
    reference = hta_rows(kind)
    assert set(ours) == set(reference)
    for name, hta in reference.items():
        row = ours[name]
        a, b = row["a"] or {"count": 0, "total_us": 0.0}, row["b"] or {"count": 0, "total_us": 0.0}
        assert (a["count"], b["count"]) == (hta["control_counts"], hta["test_counts"]), name
        assert b["count"] - a["count"] == hta["diff_counts"], name
        assert b["total_us"] - a["total_us"] == pytest.approx(hta["diff_duration"], abs=0.01)
        status = (
            "new" if hta["control_counts"] == 0 else "gone" if hta["test_counts"] == 0 else "both"
        )
        assert row["status"] == status, name
    assert names["new"] == [r["name"] for r in names["rows"] if r["status"] == "new"]


def test_operators_are_ranked_by_the_change_in_self_time_per_step(
    twin_changes: dict[str, Any],
) -> None:
    rows = twin_changes["operators"]["rows"]
    moves = [abs(r["change"]["self_ms_per_step"]) for r in rows]
    assert moves == sorted(moves, reverse=True)
    # The single-process loader's fetch is the largest change: it is gone with 4 workers.
    assert rows[0]["name"].startswith("enumerate(DataLoader)#_SingleProcessDataLoaderIter")
    assert rows[0]["status"] == "gone"


def test_a_json_report_without_totals_says_the_tables_are_not_in_it(
    twins: tuple[dict[str, Any], dict[str, Any]],
) -> None:
    a, b = twins
    old = {key: value for key, value in a.items() if key != "totals"}
    found = changes(DiffSide(old, "old.json", from_json=True), DiffSide(b, "nw4"))
    for kind in ("operators", "kernels"):
        assert found[kind]["available"] is False
        assert found[kind]["why"].startswith(NOT_IN_JSON) and "old.json" in found[kind]["why"]
    assert found["steps"]["steps_per_s_ratio"] is not None


def test_memory_is_compared_where_both_have_a_peak_and_otherwise_says_which_lacks_it(
    twins: tuple[dict[str, Any], dict[str, Any]], twin_changes: dict[str, Any]
) -> None:
    a, b = twins
    memory = twin_changes["memory"]
    assert memory["available"]
    assert (
        memory["change_bytes"]
        == b["metrics"]["memory_peak_bytes"] - a["metrics"]["memory_peak_bytes"]
    )
    without = {**b, "metrics": {k: v for k, v in b["metrics"].items() if k != "memory_peak_bytes"}}
    missing = changes(DiffSide(a, "a"), DiffSide(without, "b"))["memory"]
    assert missing["available"] is False and "no memory peak in B " in missing["why"]
    assert [row["b_peak_bytes"] for row in missing["devices"]] == [None]  # A's row alone


def test_collectives_are_compared_by_kind_with_the_change_in_time() -> None:
    def report(all_reduce_ms: float | None) -> dict[str, Any]:
        comm = {} if all_reduce_ms is None else {
            "all_reduce": {"count": 4, "total_ms": all_reduce_ms, "share": 0.1, "bytes": 8.0}
        }  # fmt: skip
        return {"steps": {}, "breakdown": {"communication": 0.1}, "communication": comm}

    found = changes(DiffSide(report(10.0), "a"), DiffSide(report(12.5), "b"))["communication"]
    assert found["kinds"]["all_reduce"]["change_ms"] == 2.5
    neither = changes(DiffSide(report(None), "a"), DiffSide(report(None), "b"))["communication"]
    assert neither["available"] is False and neither["why"] == "no collectives in either"
