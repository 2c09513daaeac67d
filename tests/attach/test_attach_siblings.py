"""`torchtop attach` on a rank of a job with no launcher above it: processes beside each other
(one parent) that share the job's rendezvous variables, as `srun` or `mp.spawn` start them.
Attach finds the peers, numbers them from RANK (else by start order, and says so), and a rank
that dies while watched is shown as ended while the others go on."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import psutil

from tests.attach.test_attach_ranks import TORCHTOP, end_all, started
from tests.conftest import WORKLOADS
from tests.live.two_nodes import free_port
from torchtop.collectors.tree import find_job, is_python
from torchtop.runs.state import load_run

JOBS = WORKLOADS


def beside(port: int) -> list[str]:
    """Two ranks started by one shell, each with its RANK and the shared rendezvous, training
    apart (`DDP=0`) so that one can die while the other goes on."""
    job = JOBS / "ddp_ranks_told.py"
    one = f"MASTER_ADDR=127.0.0.1 MASTER_PORT={port} WORLD_SIZE=2 DDP=0 {sys.executable} {job}"
    return ["bash", "-c", f"RANK=0 {one} & RANK=1 {one} & wait"]


def test_a_rank_that_dies_while_watched_is_shown_ended_and_the_other_goes_on(
    tmp_path: Path,
) -> None:
    run_dir = tmp_path / "run"
    with started(beside(free_port())) as job:
        options = ["--headless", "--for", "10", "--format", "json", "--run-dir", str(run_dir)]
        attach = subprocess.Popen(
            [*TORCHTOP, "attach", str(job.ranks[1]), *options],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        seen(run_dir, job.ranks[0])
        subprocess.run(["kill", "-KILL", str(job.ranks[0])], check=True)
        stdout, stderr = attach.communicate(timeout=120)
        assert job.process.poll() is None, "the job's other rank goes on"
    assert attach.returncode == 0, stderr
    shell = job.process.pid
    assert stderr.splitlines()[0] == (
        f"torchtop: PID {job.ranks[1]} is rank 1 of a job of 2 ranks under PID {shell}: "
        f"watching the job's 2 ranks: rank 0 PID {job.ranks[0]}, rank 1 PID {job.ranks[1]} "
        "(stack samples, no agent inside)"
    )
    report = json.loads(stdout)
    ranks = {r["rank"]: r for r in report["ranks"]}
    assert {n: r["pid"] for n, r in ranks.items()} == job.ranks
    assert ranks[0]["ended"] is not None and ranks[0]["ended"].startswith("silent since ")
    assert ranks[1]["ended"] is None
    assert ranks[1]["bottleneck"] == "dataloader", ranks[1]


def test_ranks_started_by_mp_spawn_are_found_from_either_rank_or_their_parent_by_start_order() -> (
    None
):
    with started([sys.executable, str(JOBS / "spawned_ranks.py")]) as job:
        for pid in job.ranks.values():
            found = find_job(pid)
            assert (found.role, found.root_pid) == ("rank", job.process.pid)
            assert found.launcher is None
            # mp.spawn passes the rank as an argument: no RANK to read, so start order.
            assert found.numbered_by == "start order"
            assert {r.rank: r.pid for r in found.ranks} == job.ranks
        parent = find_job(job.process.pid)
    assert (parent.role, parent.root_pid) == ("parent", job.process.pid)
    assert {r.rank: r.pid for r in parent.ranks} == job.ranks


def seen(run_dir: Path, pid: int) -> None:
    """Until attach's host samples have listed `pid` (so its death is a change it sees)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        host = load_run(run_dir).samples.host if (run_dir / "run.json").exists() else []
        if any(p.pid == pid for sample in host for p in sample.processes):
            return
        time.sleep(0.25)
    raise AssertionError(f"attach never sampled PID {pid}")


def test_dataloader_workers_that_inherit_an_exported_rendezvous_are_no_ranks() -> None:
    # Clusters often export MASTER_PORT for everyone: the workers inherit it, and are no ranks.
    env = {**os.environ, "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29598", "WORLD_SIZE": "1"}
    command = [sys.executable, "-m", "torchtop.demo.train", "--num-workers", "2"]
    job = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        workers = children(job.pid, count=2)
        assert find_job(job.pid).role == "process"
        assert find_job(workers[0].pid).role == "process"
    finally:
        end_all(job)


def children(pid: int, count: int) -> list[psutil.Process]:
    """Until `pid` has `count` python children (its DataLoader workers)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        # Torch renames its workers (`pt_data_worker`): their command line is the job's.
        found = [c for c in psutil.Process(pid).children() if is_python(tuple(c.cmdline()))]
        if len(found) >= count:
            return found
        time.sleep(0.25)
    raise AssertionError(f"PID {pid} never started {count} workers")
