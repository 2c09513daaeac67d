"""The time to out-of-memory against a real death: a job under `torchtop run` sets its own
RLIMIT_AS (`workloads/grows_to_its_limit.py`: its address space then plus 640 MiB) and keeps
4 MiB more each step until an allocation fails, about 10 s later.

A few seconds after the limit is set, the live monitor (the dashboard's and `--headless`'s
tick) reads the run folder as it is then and gives the time left; the job's death is its
agent's `bye` record. The prediction, from the host sample it was counted from, must land
within 30% of the time the job really had left. The limit is counted against the address
space (VmSize), which RLIMIT_AS bounds, read by the host sampler. Measured here: 6.9 and 7.1 s
predicted where the job had 7.9 and 8.1 s left; counted against the resident set, as before,
it would have said ~14 s, the address space running 0.5 GiB ahead of the resident set (mapped
libraries, thread stacks, reserved arenas).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import WORKLOADS
from torchtop.diagnosis.rules import load_rules
from torchtop.live.watch import LiveMonitor
from torchtop.runs.journal import JournalReader
from torchtop.runs.layout import RunLayout
from torchtop.runs.records import Bye, Hello

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads VmSize from /proc"),
]

JOB = [sys.executable, str(WORKLOADS / "grows_to_its_limit.py")]
READ_AFTER_S = 3.5
"""How long after the limit is set the monitor reads the run: a third of the job's life."""


def wait_for(path: Path, timeout_s: float) -> dict[str, float]:
    deadline = time.monotonic() + timeout_s
    while not path.exists():
        assert time.monotonic() < deadline, f"no {path.name} within {timeout_s:g} s"
        time.sleep(0.1)
    mark: dict[str, float] = json.loads(path.read_text())
    return mark


def records(run: Path) -> list[object]:
    events = next(RunLayout(run).events_dir.glob("agent-*.jsonl"))
    return list(JournalReader(events).read_new(final=True))


def test_the_time_to_an_address_space_limit_is_when_the_job_really_dies(tmp_path: Path) -> None:
    run, mark = tmp_path / "run", tmp_path / "mark.json"
    command = [sys.executable, "-m", "torchtop", "run", "--headless", "--for", "60",
               "--run-dir", str(run), "--", *JOB, "--mark", str(mark)]  # fmt: skip
    # One malloc arena a thread at most two: an arena reserves 64 MiB of address space at once.
    env = {**os.environ, "TORCHTOP_PROGRESS": "0", "MALLOC_ARENA_MAX": "2"}
    job = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        limit_set = wait_for(mark, 40)
        time.sleep(max(limit_set["t"] + READ_AFTER_S - time.time(), 0.0))
        snapshot = LiveMonitor(run, load_rules()).tick()
    finally:
        _, stderr = job.communicate(timeout=60)
    assert b"can't allocate memory" in stderr, stderr[-2000:]
    metrics = snapshot.report.job.metrics
    assert "RLIMIT_AS" in str(metrics["rss_growth_rate"]), metrics["rss_growth_rate"]
    pid = next(r.pid for r in records(run) if isinstance(r, Hello))
    read_at = max(s.t for s in snapshot.state.samples.host if any(
        p.pid == pid and p.vm_bytes for p in s.processes))  # fmt: skip
    died_at = next(r.t for r in records(run) if isinstance(r, Bye))
    left_s = metrics["rss_growth_seconds_to_limit"]
    assert isinstance(left_s, float)
    assert left_s == pytest.approx(died_at - read_at, rel=0.3), (left_s, died_at - read_at)
