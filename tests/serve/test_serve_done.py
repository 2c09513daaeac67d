"""Issue 12's "Done means" through `--serve` streams instead of a shared folder: the job of
tests/live/test_nodes_done.py (a planted straggler on one node, a rank that SIGKILLs itself on
the other), each launcher with its own run folder and `--serve` on a loopback address of its own
(127.0.0.2, 127.0.0.3), followed by `torchtop watch URL URL --headless --report`. The report is
held against what the job printed, as the shared-folder test holds its own."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.live.test_nodes_done import (
    JOB,
    KILL_RANK,
    NAMED_WITHIN_S,
    SLOW_RANK,
    JobLog,
    check_report,
    follow,
)
from tests.live.two_nodes import free_port
from tests.serve.test_serve_streams import NODES, free_serve_port

TORCHTOP = [sys.executable, "-m", "torchtop"]

pytestmark = pytest.mark.slow


def serving_launcher(
    tmp_path: Path, node: str, node_rank: int, rdzv: int, port: int
) -> subprocess.Popen[str]:
    torchrun = [
        sys.executable, "-m", "torch.distributed.run", "--nnodes", "2",
        "--node-rank", str(node_rank), "--nproc-per-node", "2", "--rdzv-backend", "c10d",
        "--rdzv-endpoint", f"127.0.0.1:{rdzv}", str(JOB),
    ]  # fmt: skip
    env = {**os.environ, "TORCHTOP_NODE": node, "SLOW_RANK": str(SLOW_RANK)}
    env |= {"KILL_RANK": str(KILL_RANK), "TORCHTOP_WINDOW_FIRST_STEP": "1000000"}
    process = subprocess.Popen(
        [*TORCHTOP, "run", "--headless", "--for", "90", "--run-dir", str(tmp_path / node),
         "--serve", f"{NODES[node]}:{port}", "--", *torchrun],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    # Listening is said before the job starts (its lines, on this stderr, are read by `follow`).
    assert process.stderr is not None
    first = process.stderr.readline()
    assert f"serving node {node}'s records on http://{NODES[node]}:{port}" in first, first
    return process


def test_the_straggler_and_the_killed_rank_are_named_through_serve_streams(
    tmp_path: Path,
) -> None:
    port, rdzv = free_serve_port(), free_port()
    nodes = [serving_launcher(tmp_path, name, rank, rdzv, port) for rank, name in enumerate(NODES)]
    watched = tmp_path / "watched.json"
    watcher = subprocess.Popen(
        [*TORCHTOP, "watch", *(f"http://{ip}:{port}" for ip in NODES.values()), "--headless",
         "--for", "90", "--report", str(watched), "--run-dir", str(tmp_path / "mirror")],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    outputs, progress = follow(nodes, watcher, node_timeout_s=150, watch_timeout_s=120)
    log = JobLog.parse({n: o.text() for n, o in zip(NODES, outputs, strict=True)})
    report = json.loads(watched.read_text())
    check_report(report, log)
    assert all(n["answering"] is True for n in report["nodes"])
    named = [t for t, line in progress.lines if f"rank {KILL_RANK} signal SIGKILL" in line]
    assert named, progress.text()
    assert named[0] - log.killed_at <= NAMED_WITHIN_S
    # The mirror is a run `analyze` reads the same.
    analyzed = subprocess.run(
        [*TORCHTOP, "analyze", str(tmp_path / "mirror"), "--format", "json"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert analyzed.returncode == 0, analyzed.stderr
    check_report(json.loads(analyzed.stdout), log)
