"""Done means: planted CPU jobs of every class, started WITHOUT torchtop, named right by
`torchtop attach PID` (stacks only: py-spy's native dumps, no agent in the job).

Each job is a plain subprocess; the test waits until its training loop runs (a Python-only
py-spy dump shows a backward, optimizer or DataLoader frame), attaches for a few seconds and
checks the class `torchtop run` names for the same job (`catalog.PLANTED` says what run says).
For the 2-rank gloo DDP job, attach is given rank 0's PID (RANK=0 in its environment).
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import psutil  # type: ignore[import-untyped, unused-ignore]
import pytest

from tests.collectors.conftest import end_tree
from tests.workloads.planted.catalog import PLANTED, PlantedJob
from torchtop.collectors.stacks import find_py_spy

PY_SPY = find_py_spy()
ATTACH_FOR_S = "20"
SET_UP_FRAMES = (
    "importlib", "<frozen", "__init__ (", "reset_parameters", "init_process_group",
    "rendezvous", "_sync_module_states", "manual_seed",
)  # fmt: skip
pytestmark = [
    pytest.mark.skipif(PY_SPY is None, reason="py-spy is not installed"),
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="native stacks: Linux"),
]


def rank_zero(launcher: int, timeout_s: float = 90.0) -> int:
    """The pid of the launcher's child whose environment says RANK=0."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for child in psutil.Process(launcher).children(recursive=True):
            try:
                if child.environ().get("RANK") == "0":
                    return int(child.pid)
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                continue
        time.sleep(0.3)
    raise AssertionError("torchrun started no rank 0")


def wait_for_loop(pid: int, timeout_s: float = 120.0) -> None:
    """Until two Python-only dumps of `pid` in a row show it past its set-up: no import, no
    constructor, no rendezvous on the stack (the job itself prints nothing to wait for)."""
    assert PY_SPY is not None
    deadline = time.monotonic() + timeout_s
    clear = 0
    while time.monotonic() < deadline and clear < 2:
        dump = subprocess.run([PY_SPY, "dump", "--pid", str(pid)], capture_output=True, text=True)
        main = dump.stdout.partition('"MainThread"')[2].split("\nThread ")[0]
        busy_setting_up = any(marker in main for marker in SET_UP_FRAMES)
        clear = clear + 1 if main.strip() and not busy_setting_up else 0
        time.sleep(0.3)
    assert clear >= 2, f"pid {pid} never got past its set-up"


def attach(pid: int, tmp_path: Path) -> dict[str, Any]:
    result = subprocess.run(
        [sys.executable, "-m", "torchtop", "attach", str(pid), "--headless", "--for",
         ATTACH_FOR_S, "--run-dir", str(tmp_path / "run"), "--format", "json"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    return json.loads(result.stdout)  # type: ignore[no-any-return]


@pytest.mark.parametrize("job", PLANTED, ids=[job.name for job in PLANTED])
def test_attach_names_the_class_of_a_planted_job_started_without_torchtop(
    tmp_path: Path, job: PlantedJob
) -> None:
    started = subprocess.Popen(
        job.command,
        env={**os.environ, **job.env},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        target = rank_zero(started.pid) if job.torchrun else started.pid
        wait_for_loop(target)
        report = attach(target, tmp_path)
        assert started.poll() is None, "attach must never stop the job it watches"
    finally:
        end_tree(started)  # torchrun's ranks included: they leave its process group
    said = (report["verdict"], report["breakdown"], [f["rule"] for f in report["findings"]])
    if job.torchrun:
        # Given rank 0, attach watches its whole job: the report is the launcher's, naming
        # the rank it was given (each rank also has its own entry).
        attached = report["source"]["attached"]
        assert (attached["pid"], attached["role"]) == (target, "rank")
        assert report["source"]["pid"] == started.pid == attached["root_pid"]
        assert sorted(r["rank"] for r in report["ranks"]) == [0, 1]
    else:
        assert report["source"]["pid"] == target
    assert report["bottleneck"] == job.bottleneck, said
    if job.finding is not None:
        assert job.finding in [f["rule"] for f in report["findings"]], said
    samples = report["steps"]["stack_samples"]
    assert samples >= 5
    for category, floor in job.at_least.items():
        # `run`'s floor, less two standard errors of a share counted from this many stacks
        # (attach's 20 s give ~30; the CI machine, loaded, once counted memcpy 13 of 30)
        margin = 2 * math.sqrt(floor * (1 - floor) / samples)
        assert report["breakdown"][category] >= floor - margin, said
