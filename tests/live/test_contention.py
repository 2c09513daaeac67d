"""Other processes busy beside a real CPU job: `run` names them in a contention finding.

The job is `workloads/threads.py` at torch's own thread count (one intra-op thread per core).
With as many busy loops as cores beside it (two on the 2-core machine the suite is sized for),
its threads wait on the run queue about half the time they could run: the report names at
least one busy pid in a `cpu-contention` finding within 30 s and offers no fix that adds
threads or DataLoader workers. The same job alone has no contention finding. Both are marked
`alone` (tests/machine_lock.py): under `pytest -n 2` no other test runs beside them, so the
other worker's jobs are not counted as tenants of the quiet case.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.busy import busy_processes, contended_count
from tests.conftest import WORKLOADS

JOB = [sys.executable, str(WORKLOADS / "threads.py")]
WATCH_S = 20
WITHIN_S = 30.0
THREAD_KNOBS = ("env.OMP_NUM_THREADS", "env.MKL_NUM_THREADS", "torch.num_threads")


def job_environment() -> dict[str, str]:
    """The suite's environment without `OMP_NUM_THREADS`: torch picks its thread count."""
    return {k: v for k, v in os.environ.items() if k != "OMP_NUM_THREADS"}


def contention_finding(report: dict[str, Any]) -> dict[str, Any] | None:
    found = [f for f in report["findings"] if f["rule"] == "cpu-contention"]
    return found[0] if found else None


def named_pids(finding: dict[str, Any]) -> set[int]:
    return {int(pid) for pid in re.findall(r"pid (\d+)", finding["message"])}


def fixes_that_add_threads(report: dict[str, Any], threads: int) -> list[tuple[str, object]]:
    """Fixes that would run more intra-op threads than `threads`, or any DataLoader worker
    (the job runs none)."""
    adding = []
    for finding in report["findings"]:
        for fix in finding["fixes"]:
            value = fix["value"]
            more_threads = fix["knob"] in THREAD_KNOBS and (
                not isinstance(value, int | float) or value > threads
            )
            workers = fix["knob"] == "dataloader.num_workers" and value != 0
            if more_threads or workers:
                adding.append((fix["knob"], value))
    return adding


def run_for(tmp_path: Path, seconds: int) -> tuple[dict[str, Any], float]:
    """`torchtop run --headless --for seconds` on the job: its report, and how long it took."""
    report = tmp_path / "report.json"
    started = time.monotonic()
    result = subprocess.run(
        [
            *(sys.executable, "-m", "torchtop", "run", "--headless", "--for", str(seconds)),
            *("--run-dir", str(tmp_path / "run"), "--report", str(report), "--", *JOB),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env=job_environment(),
    )
    assert result.returncode == 0, result.stderr[-2000:]
    return json.loads(report.read_text()), time.monotonic() - started


@pytest.mark.slow
@pytest.mark.alone
def test_run_names_the_busy_processes_beside_a_cpu_job_and_offers_no_fix_that_adds_threads(
    tmp_path: Path,
) -> None:
    with busy_processes(contended_count()) as busy:
        report, took_s = run_for(tmp_path, WATCH_S)
    assert took_s < WITHIN_S
    finding = contention_finding(report)
    assert finding is not None, [f["message"] for f in report["findings"]]
    assert named_pids(finding) & set(busy), finding["message"]
    assert finding["class"] == "cpu"
    evidence = finding["evidence"]
    assert evidence["contender_cores"] >= 0.5 and evidence["runqueue_wait_share"] >= 0.15
    assert finding["recoverable_share"] == pytest.approx(evidence["runqueue_wait_share"], abs=1e-3)
    threads = evidence["torch_num_threads"]
    assert isinstance(threads, int) and threads >= 1
    assert fixes_that_add_threads(report, threads) == []


@pytest.mark.slow
@pytest.mark.alone
def test_run_of_the_same_cpu_job_alone_has_no_contention_finding(tmp_path: Path) -> None:
    report, _ = run_for(tmp_path, WATCH_S)
    # A verdict was reached (its findings were looked for); which class depends on the loader's
    # share of this job's short steps, not on the machine.
    assert report["bottleneck"] != "unknown", report["verdict"]
    assert contention_finding(report) is None, contention_finding(report)
