"""Issue 12's "Done means" on a shared run folder: two launchers ("nodes" a and b on this
machine) each run half of a real two-node torchrun job (tests/workloads/ddp_nodes.py) with a
planted straggler (rank 1, node a) and a rank that SIGKILLs itself (rank 2, node b).

`torchtop watch --headless --report` follows the folder live, `torchtop analyze` reads it after;
both are held against what the job itself printed: each rank's busy time per step (the
straggler's `slower_by`), the step and the time the killed rank died, how the others ended.
"""

from __future__ import annotations

import json
import os
import re
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import IO, Any

import pytest

from tests.conftest import WORKLOADS
from tests.live.two_nodes import analyze, free_port, torchrun
from tests.live.two_nodes import watcher as watch
from torchtop.assess.run import WARMUP_STEPS

JOB = WORKLOADS / "ddp_nodes.py"
TORCHTOP = [sys.executable, "-m", "torchtop"]
SLOW_RANK, KILL_RANK = 1, 2
NAMED_WITHIN_S = 10.0
SLOWER_BY_REL = 0.35
"""`slower_by` against the job's own busy times: the agent's busy time (step wall less
backward) is measured between optimizer steps, the job's from the top of the loop body."""

pytestmark = pytest.mark.slow


@dataclass
class Lines:
    """A process's stream read as it is written, each line with when it arrived."""

    stream: IO[str]
    lines: list[tuple[float, str]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        for line in self.stream:
            self.lines.append((time.time(), line.rstrip("\n")))

    def text(self) -> str:
        self.reader.join(timeout=30)
        return "\n".join(line for _, line in self.lines)


def launcher(run_dir: Path, node: str, node_rank: int, port: int) -> subprocess.Popen[str]:
    """`torchtop run` of one node's torchrun: its stderr (a pipe) holds the job's lines, as
    its stdout is the report; torchrun's and the launcher's messages come there too, each
    line in one write as the job's own are, so none is cut by another."""
    env = {**os.environ, "TORCHTOP_NODE": node, "SLOW_RANK": str(SLOW_RANK)}
    env |= {"KILL_RANK": str(KILL_RANK), "TORCHTOP_WINDOW_FIRST_STEP": "1000000"}
    job = torchrun(JOB, node_rank, port)
    return subprocess.Popen(
        [*TORCHTOP, "run", "--headless", "--for", "90", "--run-dir", str(run_dir), "--", *job],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )


@dataclass
class JobLog:
    """What the job printed: each rank's busy ms per step, the killed rank's step and time."""

    busy_ms: dict[int, dict[int, float]]
    killed_step: int
    killed_at: float
    failed: set[int]
    node: dict[int, str]
    """Where each rank ran: the launcher whose output has its lines (the c10d rendezvous,
    not `--node-rank`, orders the nodes, so rank 0 may be on either)."""

    @classmethod
    def parse(cls, outputs: dict[str, str]) -> JobLog:
        node = {
            int(rank): name
            for name, text in outputs.items()
            for rank in re.findall(r"^rank (\d) step 1 ", text, re.M)
        }
        text = "\n".join(outputs.values())
        busy: dict[int, dict[int, float]] = {}
        for rank, step, ms in re.findall(r"^rank (\d) step (\d+) busy_ms ([\d.]+)$", text, re.M):
            busy.setdefault(int(rank), {})[int(step)] = float(ms)
        killed = re.search(rf"^rank {KILL_RANK} killed at step (\d+) t ([\d.]+)$", text, re.M)
        assert killed is not None, text[-3000:]
        failed = {int(r) for r in re.findall(r"^rank (\d) failed: ", text, re.M)}
        return cls(busy, int(killed.group(1)), float(killed.group(2)), failed, node)

    def slower_by(self, steps: Iterator[int] | range) -> float:
        """The straggler's median busy time over `steps` against the others' (all ranks')."""
        numbers = list(steps)
        own = statistics.median(self.busy_ms[SLOW_RANK][n] for n in numbers)
        others = [self.busy_ms[r][n] for r in self.busy_ms if r != SLOW_RANK for n in numbers]
        return own / statistics.median(others) - 1


def follow(
    nodes: list[subprocess.Popen[str]],
    watcher: subprocess.Popen[str],
    node_timeout_s: float,
    watch_timeout_s: float,
) -> tuple[list[Lines], Lines]:
    """Read every launcher's stderr (the job's output: `run --headless` keeps its stdout for
    the report) and the watcher's progress as they come, until all end (killed past their
    timeouts); the watcher must end with status 0."""
    assert watcher.stderr is not None
    progress = Lines(watcher.stderr)
    outputs = []
    try:
        for node in nodes:
            assert node.stderr is not None
            outputs.append(Lines(node.stderr))
        for node in nodes:
            node.wait(timeout=node_timeout_s)
        watcher.wait(timeout=watch_timeout_s)
    finally:
        for process in (*nodes, watcher):
            process.kill()
    assert watcher.returncode == 0, progress.text()[-3000:]
    return outputs, progress


def run_job(tmp_path: Path) -> tuple[Path, Path, JobLog, Lines]:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    watched = tmp_path / "watched.json"
    watcher = watch(run_dir, watched, 60)
    port = free_port()
    nodes = [launcher(run_dir, "a", 0, port), launcher(run_dir, "b", 1, port)]
    outputs, progress = follow(nodes, watcher, node_timeout_s=120, watch_timeout_s=90)
    return (
        run_dir,
        watched,
        JobLog.parse({n: o.text() for n, o in zip("ab", outputs, strict=True)}),
        progress,
    )


def check_report(report: dict[str, Any], log: JobLog) -> None:
    ranks = {r["rank"]: r for r in report["ranks"]}
    assert sorted(ranks) == [0, 1, 2, 3]
    assert {r: e["node"] for r, e in ranks.items()} == log.node
    assert {n["name"]: n["ranks"] for n in report["nodes"]} == {
        name: sorted(r for r, at in log.node.items() if at == name) for name in "ab"
    }
    # Nothing recorded is lost: each rank's steps are the steps it printed (the agent numbers
    # them from 0, and the counts leave out the warm-up).
    logged = {r: len(steps) for r, steps in log.busy_ms.items()}
    assert {r: e["steps"]["count"] + WARMUP_STEPS for r, e in ranks.items()} == logged
    assert {r: e["steps"]["per_step"][-1]["step"] + 1 for r, e in ranks.items()} == logged
    assert [r for r, e in ranks.items() if e["straggler"]] == [SLOW_RANK], report["ranks"]
    shared = min(len(steps) for steps in log.busy_ms.values())
    expected = log.slower_by(range(max(shared - 49, 1), shared + 1))
    assert ranks[SLOW_RANK]["slower_by"] == pytest.approx(expected, rel=SLOWER_BY_REL)
    assert ranks[KILL_RANK]["ended"] == "signal SIGKILL"
    # Where it was: its newest stack dump (every 5 s by the launcher), taken before it died.
    last = ranks[KILL_RANK]["last_stack"]
    assert datetime.fromisoformat(last["at"]).timestamp() <= log.killed_at
    assert any(frame["file"] == str(JOB) for frame in last["frames"]), last
    for rank, entry in ranks.items():
        if rank in log.failed:  # its all-reduce failed; torchrun may stop it mid-teardown
            assert entry["ended"] in ("exit 1", "signal SIGTERM"), (rank, entry)
        elif rank != KILL_RANK:  # stopped by its torchrun once its peer died
            assert entry["ended"] in ("signal SIGTERM", "signal SIGKILL"), (rank, entry)


def test_a_straggler_and_a_killed_rank_on_two_nodes_are_named_by_watch_and_analyze(
    tmp_path: Path,
) -> None:
    run_dir, watched, log, progress = run_job(tmp_path)
    check_report(json.loads(watched.read_text()), log)
    check_report(json.loads(analyze(run_dir)), log)
    for form in ("text", "markdown"):
        shown = analyze(run_dir, form)
        assert "ended: signal SIGKILL" in shown and "straggler: +" in shown, shown
        for name in "ab":  # each node on a line of its own, with its ranks
            ranks = ",".join(str(r) for r in sorted(r for r, n in log.node.items() if n == name))
            assert re.search(rf"^(\| |  ){name} .*\b{ranks}\b", shown, re.M), (name, shown)
    named = [t for t, line in progress.lines if f"rank {KILL_RANK} signal SIGKILL" in line]
    assert named, progress.text()
    assert named[0] - log.killed_at <= NAMED_WITHIN_S
