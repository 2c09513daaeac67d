"""Memory from `[memory]` events, checked against a real CPU job whose allocations are known
(tests/workloads/known_allocations.py) and against the real GPU traces."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import WORKLOADS, analyze_json

JOB = WORKLOADS / "known_allocations.py"
BIG, SMALL = 64 << 20, 32 << 20
BERT = "tracelens/h100/gaunernst_bert-small-uncased__1016001.json.gz"


@pytest.fixture(scope="module")
def job_memory(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    pytest.importorskip("torch")
    out = tmp_path_factory.mktemp("known_allocations")
    subprocess.run(
        [sys.executable, str(JOB), str(out)], check=True, capture_output=True, timeout=300
    )
    (trace,) = out.glob("*.pt.trace.json")
    report = analyze_json(trace)
    (cpu,) = report["memory"]
    assert isinstance(cpu, dict)
    return cpu


def test_the_cpu_peak_is_the_two_known_tensors_held_at_once(job_memory: dict[str, Any]) -> None:
    # The profiler counts from its start: the peak is the 96 MiB plus the few small tensors
    # alive beside them, which the top allocators name.
    others = sum(
        a["alive_at_peak_bytes"]
        for a in job_memory["top_allocators"]
        if a["name"] not in ("aten::empty", "aten::zeros")
    )
    assert job_memory["device"] == "cpu"
    assert job_memory["peak_allocated_bytes"] == BIG + SMALL + others
    assert others < 64 << 10


def test_the_top_allocators_alive_at_the_peak_are_exactly_the_known_tensors(
    job_memory: dict[str, Any],
) -> None:
    first, second = job_memory["top_allocators"][:2]
    assert (first["name"], first["alive_at_peak_bytes"]) == ("aten::empty", BIG)
    assert (second["name"], second["alive_at_peak_bytes"]) == ("aten::zeros", SMALL)
    # One allocation of each per profiled step, three steps.
    assert (first["count"], first["bytes"]) == (3, 3 * BIG)
    assert (second["count"], second["bytes"]) == (3, 3 * SMALL)


def test_each_steps_peak_falls_in_its_forward_before_backward(job_memory: dict[str, Any]) -> None:
    steps = job_memory["steps"]
    assert len(steps) == 3
    assert all(s["phase"] == "forward" for s in steps)
    assert all(s["peak_allocated_bytes"] == job_memory["peak_allocated_bytes"] for s in steps)
    assert job_memory["peak_reserved_bytes"] is None  # the CPU reserves nothing
    assert job_memory["headroom_bytes"] is None  # the host's capacity is not in the trace


def test_the_gpu_peak_is_the_highest_total_allocated_as_tb_profiler_reads_it(
    shared: Path,
) -> None:
    import gzip
    import json

    events = json.loads(gzip.decompress((shared / BERT).read_bytes()))["traceEvents"]
    totals = [
        e["args"]["Total Allocated"]
        for e in events
        if e.get("name") == "[memory]" and e["args"].get("Device Type") == 1
    ]
    report = analyze_json(shared / BERT)
    (gpu,) = [d for d in report["memory"] if d["device"] == "cuda:0"]
    assert gpu["peak_allocated_bytes"] == max(totals)
    assert gpu["capacity_bytes"] == 85018279936
    assert gpu["headroom_bytes"] == gpu["capacity_bytes"] - gpu["peak_allocated_bytes"]
    assert gpu["assumption"].startswith("activations grow with the batch")
    persistent = gpu["persistent_bytes"]
    grows = gpu["peak_allocated_bytes"] - persistent
    assert gpu["batch_factor_max"] == pytest.approx((gpu["capacity_bytes"] - persistent) / grows)


def test_a_gpu_trace_with_backward_places_its_peak_in_backward(shared: Path) -> None:
    report = analyze_json(shared / "hta/df_index_resolver/df_index_resolver.json.gz")
    (gpu,) = [d for d in report["memory"] if d["device"] == "cuda:1"]
    assert gpu["rank"] == 1
    assert {s["phase"] for s in gpu["steps"]} == {"backward"}
    assert len(gpu["curve"]) <= 120


def test_a_trace_without_totals_has_no_memory_section_as_in_tb_profiler(shared: Path) -> None:
    # The 2021 ResNet traces write `Bytes` only: torch-tb-profiler shows no peak for them.
    report = analyze_json(
        shared / "kineto-tb-plugin/resnet50_num_workers_0/worker0.1623143089861.pt.trace.json.gz"
    )
    assert "memory" not in report
