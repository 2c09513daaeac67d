"""Collectives by kind, checked against a direct sum over a real NCCL trace's events."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

from tests.conftest import RESNET_NW0, analyze_json

DLRM = "param/dlrm_kineto"
DLRM_RANK1 = f"{DLRM}/worker1_step_12.1694128201556.pt.trace.json.gz"


def direct_sums(path: Path) -> dict[str, tuple[int, float]]:
    """Per kind, NCCL kernels inside the profiled steps, summed straight from the JSON.

    A reader sees the host call `nccl:all_to_all` and `nccl:all_reduce`; NCCL runs the first
    as SendRecv kernels and the second as AllReduce kernels."""
    events: list[dict[str, Any]] = json.loads(gzip.decompress(path.read_bytes()))["traceEvents"]
    steps = [e for e in events if str(e.get("name", "")).startswith("ProfilerStep#")]
    lo = min(float(e["ts"]) for e in steps)
    hi = max(float(e["ts"]) + float(e["dur"]) for e in steps)
    hosts = {e["name"] for e in events if e.get("cat") == "user_annotation"}
    assert {"nccl:all_to_all", "nccl:all_reduce"} <= hosts
    sums: dict[str, tuple[int, float]] = {}
    for e in events:
        if e.get("cat") != "kernel" or not e["name"].startswith("ncclKernel_"):
            continue
        if not lo <= float(e["ts"]) < hi:
            continue
        kind = "all_reduce" if "_AllReduce_" in e["name"] else "all_to_all"
        count, total = sums.get(kind, (0, 0.0))
        sums[kind] = (count + 1, total + float(e["dur"]))
    return sums


def test_one_rank_reports_each_collective_kind_with_the_traces_own_count_and_time(
    shared: Path,
) -> None:
    expected = direct_sums(shared / DLRM_RANK1)
    report = analyze_json(shared / DLRM_RANK1)["communication"]
    assert set(report) == {"all_to_all", "all_reduce"} == set(expected)
    step_ms = analyze_json(shared / DLRM_RANK1)["steps"]["mean_ms"]
    for kind, (count, total_us) in expected.items():
        assert report[kind]["count"] == count
        assert abs(report[kind]["total_ms"] - total_us / 1000.0) < 0.001
        assert report[kind]["bytes"] is None  # no sizes in this trace: None, never 0
        assert report[kind]["share"] > 0.0
    # One step: the shares are of that step's time.
    assert abs(report["all_to_all"]["total_ms"] / step_ms - report["all_to_all"]["share"]) < 0.01


def test_eight_ranks_each_carry_their_collectives_and_the_job_sums_them(shared: Path) -> None:
    document = analyze_json(shared / DLRM)
    ranks = document["ranks"]
    assert len(ranks) == 8
    for kind in ("all_to_all", "all_reduce"):
        counts = [r["communication"][kind]["count"] for r in ranks]
        assert document["communication"][kind]["count"] == sum(counts)
        rank1 = next(r for r in ranks if r["rank"] == 1)
        assert rank1["communication"][kind]["count"] == direct_sums(shared / DLRM_RANK1)[kind][0]


def test_a_trace_without_collectives_has_no_communication_field(shared: Path) -> None:
    document = analyze_json(shared / RESNET_NW0)
    assert "communication" not in document


def test_the_text_report_names_the_collectives_in_one_line(shared: Path) -> None:
    import contextlib
    import io

    from torchtop.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["analyze", str(shared / DLRM_RANK1)]) == 0
    lines = [line for line in out.getvalue().splitlines() if "collectives:" in line]
    assert len(lines) == 1
    assert "all_reduce" in lines[0] and "all_to_all" in lines[0]


def test_a_gloo_ranks_concurrent_calls_count_per_thread_and_their_time_once(
    shared: Path,
) -> None:
    # The CPU-only gloo rank's step holds two `gloo:all_reduce` ranges at once, one on each of
    # gloo's two worker threads (3553 from 548,353 µs, 3554 from 556,659 µs): two calls, as
    # a DDP comm hook counts them (tests/live/test_comm_live.py). Summed, their time came to
    # 164% of the step; as a union, the share is the step's communication share as the
    # breakdown (torch-tb-profiler's way) measures it.
    report = analyze_json(shared / "hta/cpu_only/rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz")
    all_reduce = report["communication"]["all_reduce"]
    assert all_reduce["count"] == 2
    assert abs(all_reduce["share"] - report["breakdown"]["communication"]) < 0.01
