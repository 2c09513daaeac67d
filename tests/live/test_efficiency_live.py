"""`torchtop run` on a CPU job of known matmuls (`workloads/matmul_job.py`): the report's
`efficiency` counts exactly the FLOPs the job does per step, and its MFU is those FLOPs over
the step time and this machine's CPU peak, measured by `agent/cpu_peak.py` (torch.utils.benchmark)
and cached before the run, which `run` reads before the job starts."""

from __future__ import annotations

import importlib.metadata
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import WORKLOADS
from tests.workloads.matmul_job import FLOPS_PER_MATMUL, FLOPS_PER_STEP, MATMULS, K, M, N
from torchtop.collectors.cpu_peak import CACHE_NAME, cache_key, run_benchmark, write_cache

WATCH_S = 15


@pytest.fixture(scope="module")
def measured_cache(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """A cache holding this machine's peak, measured now (under whatever else runs here: the
    figure is the one the MFU must be counted against, not a claim about the machine)."""
    folder = tmp_path_factory.mktemp("cache")
    record = run_benchmark(sys.executable)
    assert isinstance(record, dict), record
    record["measured_at"] = "by the test"
    write_cache(folder / CACHE_NAME, cache_key(importlib.metadata.version("torch")), record)
    return folder, record


def run_matmuls(tmp_path: Path, cache: Path) -> dict[str, Any]:
    report = tmp_path / "report.json"
    env = {**os.environ, "TORCHTOP_CACHE_DIR": str(cache), "TORCHTOP_WINDOW_FIRST_STEP": "3",
           "TORCHTOP_CPU_PEAK": "1"}  # fmt: skip
    done = subprocess.run(
        [
            *(sys.executable, "-m", "torchtop", "run", "--headless", "--for", str(WATCH_S)),
            *("--run-dir", str(tmp_path / "run"), "--report", str(report)),
            *("--", sys.executable, str(WORKLOADS / "matmul_job.py")),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    loaded: dict[str, Any] = json.loads(report.read_text())
    return loaded


def test_the_live_report_counts_the_jobs_flops_exactly_and_its_mfu_against_the_measured_peak(
    tmp_path: Path, measured_cache: tuple[Path, dict[str, Any]]
) -> None:
    cache, record = measured_cache
    report = run_matmuls(tmp_path, cache)
    efficiency = report.get("efficiency")
    assert efficiency is not None, report.get("notes")
    assert efficiency["device"] == "CPU" and efficiency["time"] == "host"
    assert efficiency["flops_per_step"] == FLOPS_PER_STEP
    (mm,) = [op for op in efficiency["ops"] if op["name"] == "aten::mm"]
    assert mm["input_dims"] == [[M, K], [K, N]] and mm["flops"] == FLOPS_PER_MATMUL
    assert mm["calls"] == MATMULS * efficiency["steps"]
    peak = efficiency["peak"]
    assert peak["source"] == "measured" and peak["tflops"] == {"fp32": record["fp32_tflops"]}
    step_s = efficiency["step_mean_ms"] / 1000
    assert efficiency["mfu"] == pytest.approx(
        FLOPS_PER_STEP / step_s / (peak["tflops"]["fp32"] * 1e12)
    )
    # Not bounded by 1 here: a peak measured beside other work may read low.
    assert efficiency["mfu"] > 0
