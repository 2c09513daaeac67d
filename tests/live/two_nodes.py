"""Two "nodes" on this machine: a free loopback port for torchrun's c10d rendezvous, one node's
half of a two-node torchrun job, and the headless watcher beside them, as the multi-node tests
launch them."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

TORCHTOP = [sys.executable, "-m", "torchtop"]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def torchrun(job: Path, node_rank: int, port: int) -> list[str]:
    """`torchrun --nnodes 2 --node-rank N --nproc-per-node 2` of `job`, rendezvous on
    127.0.0.1:`port` (c10d: the rendezvous, not `--node-rank`, orders the nodes' ranks)."""
    return [
        sys.executable, "-m", "torch.distributed.run", "--nnodes", "2",
        "--node-rank", str(node_rank), "--nproc-per-node", "2", "--rdzv-backend", "c10d",
        "--rdzv-endpoint", f"127.0.0.1:{port}", str(job),
    ]  # fmt: skip


def watcher(run_dir: Path, report: Path, for_s: int) -> subprocess.Popen[str]:
    """`torchtop watch RUN --headless --report`: its progress lines on stderr (a pipe)."""
    options = ["--headless", "--for", str(for_s), "--report", str(report)]
    return subprocess.Popen(
        [*TORCHTOP, "watch", str(run_dir), *options],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )


def analyze(run_dir: Path, form: str = "json") -> str:
    """`torchtop analyze RUN --format FORM`'s output (it must succeed)."""
    analyzed = subprocess.run(
        [*TORCHTOP, "analyze", str(run_dir), "--format", form],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert analyzed.returncode == 0, analyzed.stderr
    return analyzed.stdout
