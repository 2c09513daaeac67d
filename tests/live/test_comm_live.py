"""A real two-rank gloo DDP job under `torchtop run`: its collectives and their overlap.

The job counts its own all-reduces with a DDP comm hook and times each backward pass
(tests/workloads/ddp_counted.py), so the report's figures are checked against the job's own
counts and clock, not against the analysis that made them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import pytest

from tests.conftest import WORKLOADS

JOBS = WORKLOADS
WINDOW_STEPS = 4


@pytest.fixture(scope="module")
def ddp_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], list[Any]]:
    """The report of the job's run and each rank's own record."""
    base = tmp_path_factory.mktemp("ddp")
    truth = base / "truth"
    truth.mkdir()
    env = {
        **os.environ,
        "DDP_TRUTH_DIR": str(truth),
        "TORCHTOP_WINDOW_FIRST_STEP": "3",
        "TORCHTOP_WINDOW_STEPS": str(WINDOW_STEPS),
    }
    job = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2"]
    launcher = [sys.executable, "-m", "torchtop", "run", "--headless"]
    launcher += ["--run-dir", str(base / "run"), "--report", str(base / "report.json"), "--"]
    result = subprocess.run(
        [*launcher, *job, str(JOBS / "ddp_counted.py")],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    records = [json.loads((truth / f"rank{n}.json").read_text()) for n in (0, 1)]
    return json.loads((base / "report.json").read_text()), records


def test_each_rank_reports_as_many_all_reduces_as_its_comm_hook_counted(
    ddp_run: tuple[dict[str, Any], list[Any]],
) -> None:
    report, records = ddp_run
    for rank in report["ranks"]:
        steps = records[rank["rank"]]["steps"]
        # After the first step DDP has rebuilt its buckets: the same calls every step.
        per_step = {s["calls"] for s in steps[1:]}
        assert len(per_step) == 1
        entry = rank["communication"]["all_reduce"]
        assert entry["count"] == per_step.pop() * WINDOW_STEPS
        # gloo's trace carries no message sizes: not measured, never 0.
        assert entry["bytes"] is None and entry["messages"] is None


def test_each_ranks_overlap_splits_its_collective_time_within_its_backward_passes(
    ddp_run: tuple[dict[str, Any], list[Any]],
) -> None:
    report, records = ddp_run
    for rank in report["ranks"]:
        overlap = rank["communication_overlap"]
        assert overlap["hidden_ms"] + overlap["exposed_ms"] == pytest.approx(
            overlap["time_ms"], abs=0.001
        )
        assert overlap["exposed_ms"] > 0
        # DDP's all-reduces start in backward and backward() returns once they are done, so
        # a step's collective time fits in that step's backward pass as the job timed it.
        walls = [s["backward_ms"] for s in records[rank["rank"]]["steps"][1 : 4 + WINDOW_STEPS]]
        assert overlap["time_ms"] <= max(walls)
        assert overlap["backward_compute_ms"] <= max(walls)


def test_the_exposed_all_reduce_finding_carries_its_gain_and_the_no_sync_fix(
    ddp_run: tuple[dict[str, Any], list[Any]],
) -> None:
    report, _ = ddp_run
    assert report["bottleneck"] == "communication"
    metrics = report["metrics"]
    ratio = metrics["allreduce_exposed_vs_backward"]
    found = {f["rule"]: f for f in report["findings"]}
    if ratio >= 1 and metrics["allreduce_exposed_share"] >= 0.05:
        finding = found["allreduce-beyond-backward"]
        assert finding["fixes"][0]["knob"] == "code.gradient_accumulation"
        share = metrics["allreduce_exposed_share"]
        assert finding["predicted_gain"] == pytest.approx(1 / (1 - share), abs=0.01)
    else:
        assert "allreduce-beyond-backward" not in found
