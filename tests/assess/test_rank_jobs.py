"""Real multi-rank jobs: a planted straggler named with how much slower, a killed rank named.

The straggler job is three gloo DDP ranks under `torchtop run --headless` (workloads/ddp_nodes.py
on one node, no rank killed) where rank 1 sleeps 50 ms before each forward; the job prints each
rank's own busy time per step, which `slower_by` must match. The second job's ranks do not
synchronise, so rank 0 goes on after rank 1 SIGKILLs itself, or hangs: the run folder is
watched while it grows, as the live view does, and a hung rank is dumped where it hangs.
"""

from __future__ import annotations

import json
import os
import re
import statistics
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

import pytest

from tests.conftest import CONTEXT, WORKLOADS
from torchtop.assess.ranks import standings
from torchtop.assess.run import assess
from torchtop.diagnosis.rules import load_rules
from torchtop.jobs.env import job_environment
from torchtop.runs.state import RunWatcher, load_run

JOBS = WORKLOADS
pytestmark = pytest.mark.slow


def test_a_rank_that_sleeps_each_step_is_named_the_straggler_by_its_own_busy_time(
    tmp_path: Path,
) -> None:
    report_path = tmp_path / "report.json"
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone"]
    result = subprocess.run(
        [
            *(sys.executable, "-m", "torchtop", "run", "--headless"),
            *("--run-dir", str(tmp_path / "run"), "--report", str(report_path), "--"),
            *(*command, "--nproc_per_node=3", str(JOBS / "ddp_nodes.py")),
        ],
        capture_output=True,
        text=True,
        timeout=240,
        env={**os.environ, "TORCHTOP_WINDOW_FIRST_STEP": "1000000"}
        | {"SLOW_RANK": "1", "KILL_RANK": "-1", "STEPS": "80"},
    )
    assert result.returncode == 0, result.stderr[-2000:]
    # Each rank's median busy time per step, as it printed them (on torchtop's stderr, as its
    # stdout is the report), past the first few steps.
    busy: dict[int, list[float]] = {}
    for rank, step, ms in re.findall(
        r"^rank (\d) step (\d+) busy_ms ([\d.]+)$", result.stderr, re.M
    ):
        if int(step) > 5:
            busy.setdefault(int(rank), []).append(float(ms))
    assert sorted(busy) == [0, 1, 2], result.stderr[-3000:]
    busy_ms = {rank: statistics.median(values) for rank, values in busy.items()}
    expected = busy_ms[1] / statistics.median([busy_ms[0], busy_ms[2]]) - 1

    ranks = {r["rank"]: r for r in json.loads(report_path.read_text())["ranks"]}
    assert [r for r, entry in ranks.items() if entry["straggler"]] == [1], ranks
    assert ranks[1]["slower_by"] == pytest.approx(expected, rel=0.35), (ranks[1], busy_ms)
    assert ranks[1]["since"]["step"] is not None
    assert all(entry["ended"] == "exit 0" for entry in ranks.values()), ranks


def test_a_rank_killed_mid_run_is_named_silent_while_its_peer_keeps_stepping(
    tmp_path: Path,
) -> None:
    run_dir, kill_file = tmp_path / "run", tmp_path / "killed"
    base = {k: v for k, v in os.environ.items() if not k.startswith("TORCHTOP_")}
    env = {**job_environment(run_dir, base), "KILL_FILE": str(kill_file)}
    job = subprocess.Popen(
        [sys.executable, str(JOBS / "rank_dies.py")],
        env=env,
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    watcher, policy = RunWatcher(run_dir), load_rules().settings.ranks
    named: tuple[str, float] | None = None
    while job.poll() is None and named is None:
        time.sleep(0.5)
        state = watcher.poll()
        ranks = state.training_processes
        if len(ranks) < 2:
            continue  # rank 1 has not stepped yet
        judged = zip(ranks, standings(ranks, policy), strict=True)
        found = {p.rank: s.ended or "" for p, s in judged}
        if found.get(1, "").startswith("silent"):
            rank0 = next(p for p in ranks if p.rank == 0)
            assert not rank0.ended, "named only once the run was over"
            named = (found[1], rank0.last_t or 0.0)
    job.communicate(timeout=120)
    assert job.returncode == 0
    assert named is not None, "rank 1 was never named silent while rank 0 ran"
    killed_at = float(kill_file.read_text())
    # In the records' own time: named once rank 0 went on past the threshold, within 10 s.
    assert named[1] - killed_at <= 10.0
    since = datetime.fromisoformat(named[0].removeprefix("silent since ")).timestamp()
    assert killed_at - 5.0 <= since <= killed_at  # its last record, to the second

    report = assess(load_run(run_dir), {}, load_rules(), context=CONTEXT)
    by_rank = {r.analysis.rank: r for r in report.ranks}
    assert by_rank[0].standing is not None and by_rank[0].standing.ended == "exit 0"
    assert by_rank[1].standing is not None and by_rank[1].standing.ended == named[0]
    # The dead rank's steps are kept; the live one has more.
    assert 10 <= len(by_rank[1].analysis.steps) < len(by_rank[0].analysis.steps)


def test_a_rank_that_hangs_is_dumped_where_it_hangs_once_silent_and_the_report_shows_it(
    tmp_path: Path,
) -> None:
    run_dir, report_path, hang_file = tmp_path / "run", tmp_path / "report.json", tmp_path / "hung"
    result = subprocess.run(
        [
            *(sys.executable, "-m", "torchtop", "run", "--headless"),
            *("--run-dir", str(run_dir), "--report", str(report_path), "--"),
            *(sys.executable, str(JOBS / "rank_dies.py")),
        ],
        capture_output=True,
        text=True,
        timeout=240,
        env={**os.environ, "HANG_FILE": str(hang_file)},
    )
    assert result.returncode == 0, result.stderr[-2000:]
    hung_at = float(hang_file.read_text())
    ranks = {r["rank"]: r for r in json.loads(report_path.read_text())["ranks"]}
    assert ranks[0]["ended"] == "exit 0" and "last_stack" not in ranks[0]
    assert ranks[1]["ended"].startswith("silent since")  # its launcher has no agent to tell
    last = ranks[1]["last_stack"]
    # Taken while it hung (after it went silent), with the function it hangs in innermost.
    assert datetime.fromisoformat(last["at"]).timestamp() > hung_at
    functions = [frame["function"] for frame in last["frames"]]
    assert functions[0] == "wait_forever", functions
    # The dump of the silent rank alone, besides the periodic dumps of the whole job.
    dumps = [json.loads(line) for line in (run_dir / "samples" / "stacks.jsonl").open()]
    hung_pid = next(
        int(path.stem.removeprefix("agent-"))
        for path in (run_dir / "events").glob("agent-*.jsonl")
        if '"rank":1' in path.read_text()
    )
    alone = [d for d in dumps if [p["pid"] for p in d.get("processes", [])] == [hung_pid]]
    assert alone and alone[0]["t"] > hung_at
