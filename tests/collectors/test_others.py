"""Other tenants of the machine, as the host sampler sees them: real busy processes.

The busy loops here are started detached (through a shell that exits at once, so they are no
descendants of this test process, which plays the collector's own process), as another
user's job would be; each is killed by its pid when the test ends.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from pathlib import Path

from tests.busy import BUSY_LOOP, busy_processes
from tests.collectors.conftest import Spawn
from torchtop.collectors.host import sample_host
from torchtop.collectors.others import is_torchtop_command, thread_waits_ns, wait_pct

IDLE_JOB = "import time\nprint('ready', flush=True)\ntime.sleep(120)\n"


@contextlib.contextmanager
def detached_busy(env: Mapping[str, str] | None = None) -> Iterator[int]:
    """A busy loop whose parent has already exited (so not our descendant); its pid."""
    shell = subprocess.run(
        ["sh", "-c", f'"{sys.executable}" -c "{BUSY_LOOP}" >/dev/null 2>&1 & echo $!'],
        capture_output=True,
        text=True,
        check=True,
        env=dict(env) if env is not None else None,
    )
    pid = int(shell.stdout.strip())
    try:
        yield pid
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def two_samples(job_pid: int, run_root: str | None = None) -> dict[int, float]:
    """The others listed in a second host sample, one second after the first: pid -> % CPU."""
    _, state = sample_host(job_pid, None, run_root)
    time.sleep(1.0)
    record, _ = sample_host(job_pid, state, run_root)
    total_pct, others = record.others_cpu_pct, record.others
    assert isinstance(total_pct, int | float) and isinstance(others, list)
    assert total_pct >= sum(float(p.cpu_pct or 0.0) for p in others) - 0.5
    return {p.pid: float(p.cpu_pct or 0.0) for p in others}


def test_a_busy_process_outside_the_job_is_listed_with_its_command_and_cpu(spawn: Spawn) -> None:
    job = spawn(IDLE_JOB)
    with detached_busy() as busy:
        _, state = sample_host(job.pid, None)
        time.sleep(1.0)
        record, _ = sample_host(job.pid, state)
    assert isinstance(record.others, list)
    listed = {p.pid: p for p in record.others}
    assert busy in listed, [(p.pid, p.command) for p in record.others]
    assert float(listed[busy].cpu_pct or 0.0) >= 20.0  # one core, shared with whatever runs
    command = listed[busy].command
    assert isinstance(command, str) and BUSY_LOOP in command
    assert job.pid not in listed


def test_busy_children_of_the_collecting_process_are_torchtop_s_own_not_others(
    spawn: Spawn,
) -> None:
    job = spawn(IDLE_JOB)
    # A child of this process stands for torchtop's own py-spy or dashboard.
    own = subprocess.Popen([sys.executable, "-c", BUSY_LOOP])
    try:
        listed = two_samples(job.pid)
    finally:
        own.kill()
        own.wait()
    assert own.pid not in listed


def test_a_process_of_the_same_run_started_elsewhere_is_not_another_tenant(
    spawn: Spawn, tmp_path: Path
) -> None:
    job = spawn(IDLE_JOB)
    node_b = {**os.environ, "TORCHTOP_RUN_DIR": str(tmp_path / "run" / "nodes" / "b")}
    with detached_busy(node_b) as same_run, detached_busy() as stranger:
        listed = two_samples(job.pid, run_root=str(tmp_path / "run"))
    assert same_run not in listed
    assert stranger in listed


def test_torchtop_s_own_command_lines_are_told_from_jobs_that_run_its_modules() -> None:
    assert is_torchtop_command(["/venv/bin/torchtop", "run", "--", "python", "train.py"])
    assert is_torchtop_command(["python3", "-m", "torchtop", "attach", "42"])
    assert is_torchtop_command(["python", "/venv/bin/torchtop", "demo"])
    assert not is_torchtop_command(["python", "-m", "torchtop.demo.train", "--steps", "30"])
    assert not is_torchtop_command(["python", "train.py", "--out", "torchtop"])
    assert not is_torchtop_command([])


def test_a_process_with_more_busy_loops_than_cores_beside_it_waits_on_the_run_queue() -> None:
    crowd = (os.cpu_count() or 1) + 2
    with busy_processes(crowd) as pids:
        time.sleep(0.2)
        before = thread_waits_ns(pids[0])
        time.sleep(1.0)
        after = thread_waits_ns(pids[0])
    assert before is not None and after is not None
    assert set(after) == {pids[0]}  # one thread: the loop
    # Each loop can run a share of a core at most cores / crowd: the rest of the time it waits.
    assert (wait_pct(before, after, 1.0) or 0.0) > 10.0
    assert thread_waits_ns(2**22 + 12345) is None  # no such process


def test_run_queue_wait_is_summed_over_the_threads_seen_in_both_readings() -> None:
    old = {1: 1_000_000_000, 2: 0}
    new = {1: 1_500_000_000, 2: 250_000_000, 3: 9_000_000_000}  # 3 is new: not counted
    assert wait_pct(old, new, 1.0) == 75.0
    assert wait_pct(None, new, 1.0) is None
    assert wait_pct(old, new, 0.0) is None
    assert wait_pct({1: 5}, {1: 3}, 1.0) == 0.0  # a counter that went back is no wait
