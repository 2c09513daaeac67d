"""Shared fixtures: the real traces in ../shared/traces, and their analyses computed once; the
training jobs the tests run (`WORKLOADS`); `fake_run`, a run folder written record by record
(`tests/fake_run.py`)."""

from __future__ import annotations

import contextlib
import functools
import io
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from torchtop.assess.context import read_context

# Parsed rule trees go to a cache folder of the test session's own, never the user's.
os.environ.setdefault("TORCHTOP_CACHE_DIR", tempfile.mkdtemp(prefix="torchtop-test-cache-"))
# No CPU peak measured after the suite's CPU jobs (sessions/cpu_peak_use.py): a detached matmul
# benchmark would load the machine beside the next test's job. Tests that want it say so.
os.environ.setdefault("TORCHTOP_CPU_PEAK", "0")

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "traces"
RULES_DIR = Path(__file__).resolve().parents[1] / "rules"
CONTEXT = read_context(frames=True)
"""What a test's direct call of the assessment is given of this machine, as the monitor reads it."""
# The training jobs tests and benchmarks run, as scripts: each finds its shared pieces
# (`workloads/sleepy.py`) in its own folder, which Python puts first on `sys.path`.
WORKLOADS = Path(__file__).resolve().parent / "workloads"
CLEANS_UP = WORKLOADS / "cleans_up.py"
"""A job that touches `ready` beside its argument, sleeps, and writes `cleaned up` as it ends."""


@functools.cache
def bare_torch_threads() -> int:
    """How many intra-op threads torch picks in a bare process on this machine: the truth for
    a job's `torch_num_threads`, which is not always the usable cores (torch counts physical
    cores, so two SMT siblings give one thread)."""
    code = "import torch; print(torch.get_num_threads())"
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    return int(result.stdout)


def signal_once_there(
    process: subprocess.Popen[str], there: Path, sig: int, settle_s: float = 1.0
) -> tuple[str, str]:
    """Once `there` exists (and `settle_s` after), send `process` the signal `sig`; its stdout
    and stderr once it has ended. It is killed if it has not ended in a minute."""
    try:
        deadline = time.monotonic() + 180
        while not there.exists():
            assert process.poll() is None, process.communicate()[1][-3000:]
            assert time.monotonic() < deadline, f"no {there} in 180 s"
            time.sleep(0.1)
        time.sleep(settle_s)
        process.send_signal(sig)
        return process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()


# tests.machine_lock: the `alone` marker, for load-sensitive tests under `pytest -n 2`;
# tests.fixture_groups: the tests that share a module fixture go to one worker.
pytest_plugins = ["tests.fake_run", "tests.machine_lock", "tests.fixture_groups"]

RESNET_NW0 = "kineto-tb-plugin/resnet50_num_workers_0/worker0.1623143089861.pt.trace.json.gz"
RESNET_NW4 = "kineto-tb-plugin/resnet50_num_workers_4/worker0.1623212756351.pt.trace.json.gz"
GOLDEN_FILE = "kineto-tb-plugin/result_check_file.txt"


@pytest.fixture(scope="session")
def shared() -> Path:
    """The real GPU traces; tests that need them skip where the checkout has no ../shared."""
    if not SHARED.is_dir():
        pytest.skip(f"real traces not found: {SHARED} is absent (they live beside the checkout)")
    return SHARED


_ANALYSES: dict[str, dict[str, Any]] = {}


def analyze_json(path: Path | str) -> dict[str, Any]:
    """`torchtop analyze PATH --format json`, in process, parsed; cached per test process."""
    from torchtop.cli import main

    key = str(path)
    if key not in _ANALYSES:
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            status = main(["analyze", key, "--format", "json"])
        assert status == 0, f"analyze {key} exited {status}"
        _ANALYSES[key] = json.loads(out.getvalue())
    return _ANALYSES[key]


def python_run(
    code: str, *args: str, env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """`code` run by a fresh interpreter (this one) with `args`; the test fails if it fails."""
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        env=env,
        check=True,
        timeout=120,
    )
