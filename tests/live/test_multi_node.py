"""Two launchers ("nodes" a and b, on this machine) share one run folder, each running its
half of a real two-node torchrun job; `watch` follows them, `analyze` reads the folder after."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import WORKLOADS
from tests.live.two_nodes import analyze, free_port, torchrun
from tests.live.two_nodes import watcher as watch

# The two-rank DDP job of the agent tests, here two ranks on each of two nodes.
JOB = WORKLOADS / "ddp.py"
TORCHTOP = [sys.executable, "-m", "torchtop"]

pytestmark = pytest.mark.slow


def launcher(run_dir: Path, node: str, node_rank: int, port: int) -> subprocess.Popen[str]:
    job = torchrun(JOB, node_rank, port)
    return subprocess.Popen(
        [*TORCHTOP, "run", "--headless", "--for", "90", "--run-dir", str(run_dir), "--", *job],
        env={**os.environ, "TORCHTOP_NODE": node},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def assert_four_ranks_two_per_node(report: dict[str, Any]) -> None:
    assert sorted(r["rank"] for r in report["ranks"]) == [0, 1, 2, 3]
    assert [(n["name"], len(n["ranks"])) for n in report["nodes"]] == [("a", 2), ("b", 2)]
    for entry in report["nodes"]:
        assert {r["node"] for r in report["ranks"] if r["rank"] in entry["ranks"]} == {
            entry["name"]
        }
    assert {n["ended"] for n in report["nodes"]} == {"exited"}


def test_two_launchers_sharing_a_run_folder_are_watched_and_analysed_as_one_run(
    tmp_path: Path,
) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    watched = tmp_path / "watched.json"
    watcher = watch(run_dir, watched, 90)
    port = free_port()
    nodes = [launcher(run_dir, "a", 0, port), launcher(run_dir, "b", 1, port)]
    try:
        outputs = [node.communicate(timeout=120) for node in nodes]
        _, watch_err = watcher.communicate(timeout=60)
    finally:
        for process in (*nodes, watcher):
            process.kill()
    for node, (_, err) in zip(nodes, outputs, strict=True):
        assert node.returncode == 0, err
        assert err.count("worker done") == 2  # the job's stdout, on torchtop's stderr
    assert watcher.returncode == 0, watch_err
    assert "4 ranks" in watch_err  # its progress lines counted every rank of both nodes
    for name in ("a", "b"):
        record = json.loads((run_dir / "nodes" / name / "run.json").read_text())
        assert record["node"] == name
        assert (run_dir / "nodes" / name / "exit.json").is_file()
    assert not (run_dir / "run.json").exists()  # nothing written outside the node folders

    assert_four_ranks_two_per_node(json.loads(analyze(run_dir)))
    assert_four_ranks_two_per_node(json.loads(watched.read_text()))
