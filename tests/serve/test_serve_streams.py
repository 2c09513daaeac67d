"""Two launchers, each with its own run folder and `--serve` on a loopback address of its own
(127.0.0.2 and 127.0.0.3 stand for two machines without a shared filesystem), run the halves of
a real two-node torchrun gloo job; `torchtop watch URL URL` follows both streams."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import psutil
import pytest

from tests.conftest import WORKLOADS
from tests.live.test_multi_node import assert_four_ranks_two_per_node
from tests.live.two_nodes import free_port

JOBS = WORKLOADS
DDP = WORKLOADS / "ddp.py"
TORCHTOP = [sys.executable, "-m", "torchtop"]
NODES = {"a": "127.0.0.2", "b": "127.0.0.3"}

pytestmark = pytest.mark.slow


def free_serve_port() -> int:
    # Both addresses must have it free: try ports the kernel gives out on the first.
    for _ in range(20):
        port = free_port()
        try:
            for ip in NODES.values():
                with socket.socket() as probe:
                    probe.bind((ip, port))
            return port
        except OSError:
            continue
    raise RuntimeError("no port free on both loopback addresses")


def serving_launcher(
    run_dir: Path, node: str, node_rank: int, rdzv: int, port: int, job: Path
) -> subprocess.Popen[str]:
    torchrun = [
        sys.executable, "-m", "torch.distributed.run", "--nnodes", "2",
        "--node-rank", str(node_rank), "--nproc-per-node", "2", "--rdzv-backend", "c10d",
        "--rdzv-endpoint", f"127.0.0.1:{rdzv}", str(job),
    ]  # fmt: skip
    process = subprocess.Popen(
        [*TORCHTOP, "run", "--headless", "--for", "120", "--run-dir", str(run_dir),
         "--serve", f"{NODES[node]}:{port}", "--", *torchrun],
        env={**os.environ, "TORCHTOP_NODE": node},
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert process.stderr is not None
    first = process.stderr.readline()  # listening comes before the job starts
    assert f"serving node {node}'s records on http://{NODES[node]}:{port}" in first, first
    return process


def watcher(urls: list[str], mirror: Path, report: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [*TORCHTOP, "watch", *urls, "--headless", "--for", "150", "--report", str(report),
         "--run-dir", str(mirror)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def analyze(folder: Path) -> dict[str, Any]:
    analyzed = subprocess.run(
        [*TORCHTOP, "analyze", str(folder), "--format", "json"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert analyzed.returncode == 0, analyzed.stderr
    report: dict[str, Any] = json.loads(analyzed.stdout)
    return report


def steps_by_rank(report: dict[str, Any]) -> dict[int, Any]:
    return {r["rank"]: r["steps"]["count"] for r in report["ranks"]}


def test_two_nodes_served_as_streams_are_watched_as_one_run_and_nothing_is_lost(
    tmp_path: Path,
) -> None:
    port, rdzv = free_serve_port(), free_port()
    folders = {name: tmp_path / f"launcher-{name}" for name in NODES}
    launchers = [
        serving_launcher(folders[name], name, rank, rdzv, port, DDP)
        for rank, name in enumerate(NODES)
    ]
    urls = [f"http://{ip}:{port}" for ip in NODES.values()]
    watched, mirror = tmp_path / "watched.json", tmp_path / "mirror"
    watching = watcher(urls, mirror, watched)
    try:
        outputs = [launcher.communicate(timeout=180) for launcher in launchers]
        _, watch_err = watching.communicate(timeout=120)
    finally:
        for process in (*launchers, watching):
            process.kill()
    for launcher, (_, err) in zip(launchers, outputs, strict=True):
        assert launcher.returncode == 0, err
        assert err.count("worker done") == 2  # the job's stdout, on torchtop's stderr
    assert watching.returncode == 0, watch_err
    assert "4 ranks" in watch_err

    report = json.loads(watched.read_text())
    assert_four_ranks_two_per_node(report)
    assert {(n["name"], n["answering"]) for n in report["nodes"]} == {("a", True), ("b", True)}
    # Nothing lost: each rank's steps as `analyze` counts them in its own launcher's folder,
    # and the mirror is a run folder `analyze` reads as the shared one.
    own = {**steps_by_rank(analyze(folders["a"])), **steps_by_rank(analyze(folders["b"]))}
    assert sorted(own) == [0, 1, 2, 3] and all(own.values())
    assert steps_by_rank(report) == own
    mirrored = analyze(mirror)
    assert_four_ranks_two_per_node(mirrored)
    assert steps_by_rank(mirrored) == own


def test_a_node_whose_launcher_dies_is_reported_silent_since_it_was_last_seen(
    tmp_path: Path,
) -> None:
    port, rdzv = free_serve_port(), free_port()
    job = JOBS / "ddp_steady.py"
    launchers = {
        name: serving_launcher(tmp_path / f"launcher-{name}", name, rank, rdzv, port, job)
        for rank, name in enumerate(NODES)
    }
    urls = [f"http://{ip}:{port}" for ip in NODES.values()]
    watched, mirror = tmp_path / "watched.json", tmp_path / "mirror"
    watching = watcher(urls, mirror, watched)
    orphans: list[psutil.Process] = []
    try:
        events = mirror / "nodes" / "b" / "events"
        deadline = time.monotonic() + 120
        while not any(p.stat().st_size > 2000 for p in events.glob("*.jsonl")):
            assert time.monotonic() < deadline, "node b's steps never reached the mirror"
            time.sleep(0.2)
        # Its job goes on without it (and is ended after the test); its stream is gone.
        orphans = psutil.Process(launchers["b"].pid).children(recursive=True)
        launchers["b"].send_signal(signal.SIGKILL)
        killed_at = time.time()
        _, err = launchers["a"].communicate(timeout=180)
        _, watch_err = watching.communicate(timeout=120)
    finally:
        for process in (*launchers.values(), watching):
            process.kill()
        for orphan in orphans:
            if orphan.is_running():
                orphan.kill()
    assert launchers["a"].returncode == 0, err
    assert watching.returncode == 0, watch_err
    assert f"node b ({urls[1]}) not answering since" in watch_err

    report = json.loads(watched.read_text())
    nodes = {n["name"]: n for n in report["nodes"]}
    assert nodes["a"]["answering"] is True and nodes["a"]["ended"] == "exited"
    assert nodes["b"]["answering"] is False and nodes["b"]["ended"] is None
    last_seen = datetime.fromisoformat(nodes["b"]["last_seen"]).timestamp()
    assert killed_at - 30 < last_seen <= killed_at + 1
    assert sorted(r["rank"] for r in report["ranks"]) == [0, 1, 2, 3]  # b's kept, not lost
    assert any("node b" in note and "not answering" in note for note in report["notes"])
