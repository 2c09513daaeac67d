"""On the shared GPU traces, a host-bound verdict whose idle time the host's late launches
explain (HTA's host wait, `analysis.idle`) names that cause in a finding: the host-wait rule or
one of the causes under the host class (launches, syncs, Python between operators)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import SHARED, analyze_json

HOST_WAIT_RULES = {"gpu-waits-on-host", "launch-bound", "sync-in-loop", "python-overhead"}
EXPLAINS_FROM = 0.1
"""The verdict's own bar for a stall (`_verdict.toml` min_recoverable_share)."""
GPU_TRACES = sorted(
    p.relative_to(SHARED).as_posix()
    for p in SHARED.rglob("*.json.gz")
    if "cpu_only" not in p.parts and "trace_compare" not in p.parts
)


@pytest.mark.parametrize("name", GPU_TRACES)
def test_a_cpu_verdict_that_host_wait_explains_has_a_finding_naming_it(
    name: str, shared: Path
) -> None:
    report = analyze_json(shared / name)
    host_wait = report["metrics"].get("idle_host_wait_share")
    if report["bottleneck"] != "cpu" or host_wait is None or host_wait <= EXPLAINS_FROM:
        return
    named = {f["rule"] for f in report["findings"]} & HOST_WAIT_RULES
    assert named, f"host wait is {host_wait:.0%} of the step, yet no finding names it"
    assert report["verdict"].get("unexplained") is None, report["verdict"]["unexplained"]
