"""Live module timings, on request: a real job with planted module costs under `torchtop run`,
the agent's figures against the job's own, the step's own time above their sum, no hook left
after the period; and the pure parts (the tree from a record, the progress line)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import WORKLOADS
from tests.tables import tables
from torchtop.assess.live_modules import live_module_tree, modules_progress
from torchtop.runs.journal import JournalReader
from torchtop.runs.records import ModulesStarted, ModuleTimes, ModuleTiming
from torchtop.runs.state import ProcessState, StepRecord

JOBS = WORKLOADS
PERIOD_STEPS = 10


def _run_planted(tmp_path: Path) -> tuple[dict[str, Any], list[dict[str, Any]], dict[str, Any]]:
    """The job's own figures, its agent's records, and the run's JSON report."""
    run_dir, report_path = tmp_path / "run", tmp_path / "report.json"
    command = [sys.executable, "-m", "torchtop", "run", "--headless", "--run-dir", str(run_dir)]
    command += [
        "--report",
        str(report_path),
        "--",
        sys.executable,
        str(JOBS / "planted_modules.py"),
    ]
    env = {k: v for k, v in os.environ.items() if not k.startswith("TORCHTOP_")}
    env["TORCHTOP_MODULE_STEPS"] = str(PERIOD_STEPS)
    done = subprocess.run(
        command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr
    # Under `--headless` text the job's own output is on stderr, the report on stdout.
    own = next(json.loads(line) for line in done.stderr.splitlines() if "slow_ms" in line)
    events = next((run_dir / "events").glob("agent-*.jsonl"))
    records = tables(JournalReader(events).read_new(final=True))
    return own, records, json.loads(report_path.read_text())


def test_live_module_times_match_the_planted_costs_and_no_hook_is_left(tmp_path: Path) -> None:
    own, records, report = _run_planted(tmp_path)
    (started,) = [r for r in records if r["kind"] == "modules_started"]
    (times,) = [r for r in records if r["kind"] == "module_times"]
    assert (times["first_step"], times["steps"]) == (started["first_step"], PERIOD_STEPS)
    assert times["device"] == "cpu" and times["clock"] == "host"
    found = {m["path"]: m for m in times["modules"]}
    per_step_ms = {p: m["forward_s"] * 1000 / PERIOD_STEPS for p, m in found.items()}
    # The job's own measurement of its planted sleeps, in the calls the hooks timed, is the
    # outside truth: each hooked call's time holds its sleep, and little more.
    assert own["hooked_calls"] == PERIOD_STEPS
    for path, truth in (
        ("Sequential_0/Sleeps_0", "slow_ms"),
        ("Sequential_0/Sequential_1/Sleeps_1", "fast_ms"),
    ):
        assert own[truth] <= per_step_ms[path] == pytest.approx(own[truth], rel=0.1)
    assert own["slow_ms"] >= 20 and own["fast_ms"] >= 5
    assert all(m["calls"] == PERIOD_STEPS for m in found.values())
    outer = found["Sequential_0"]
    inside = ("Sequential_0/Sleeps_0", "Sequential_0/Sequential_1")
    assert outer["forward_self_s"] == pytest.approx(
        outer["forward_s"] - sum(found[p]["forward_s"] for p in inside)
    )
    # Every root's forward happens inside the steps timed: their sum is under the steps' time.
    roots = [m for p, m in found.items() if "/" not in p]
    assert {p for p in found if "/" not in p} == {"Sequential_0", "MSELoss_0"}
    walls = [
        r["wall_s"]
        for r in records
        if r["kind"] == "step" and times["first_step"] <= r["step"] <= times["last_step"]
    ]
    assert times["wall_s"] == pytest.approx(sum(walls))
    assert sum(m["forward_s"] for m in roots) < times["wall_s"]
    # The hooks were there during the period and are gone after it.
    assert own["saw_hooks"]
    assert (own["global_hooks_after"], own["module_hooks_after"]) == (0, 0)
    tree = report["modules"]
    assert (tree["source"], tree["steps"], tree["first_step"]) == (
        "agent",
        PERIOD_STEPS,
        times["first_step"],
    )
    (sequential,) = [m for m in tree["tree"] if m["name"] == "Sequential_0"]
    slow = next(m for m in sequential["children"] if m["name"] == "Sleeps_0")
    assert slow["forward_ms"] == pytest.approx(own["slow_ms"], rel=0.1)
    assert slow["backward_ms"] is None


def _timing(path: str, calls: int, total_s: float, self_s: float) -> ModuleTiming:
    return ModuleTiming(path=path, calls=calls, forward_s=total_s, forward_self_s=self_s)


def test_the_record_becomes_the_trace_views_tree_in_ms_per_step() -> None:
    times = ModuleTimes(
        t=1.0, first_step=40, last_step=43, steps=4, wall_s=0.2, device="cuda:0",
        modules=[
            _timing("Net_0/Linear_0", 8, 0.008, 0.008),
            _timing("Net_0/ReLU_0", 4, 0.002, 0.002),
            _timing("Net_0", 4, 0.012, 0.002),
            _timing("Orphan_0/Linear_1", 4, 0.004, 0.004),
        ],
    )  # fmt: skip
    tree = live_module_tree(times)
    assert tree is not None
    assert (tree.source, tree.first_step, tree.steps, tree.device) == ("agent", 40, 4, "cuda:0")
    net, orphan = tree.roots
    assert (net.name, net.forward_ms, net.forward_self_ms, net.backward_ms) == (
        "Net_0",
        3.0,
        0.5,
        None,
    )
    assert [(c.name, c.calls, c.forward_ms) for c in net.children] == [
        ("Linear_0", 8, 2.0),
        ("ReLU_0", 4, 0.5),
    ]
    assert orphan.name == "Linear_1"  # its parent never finished a forward: a root


def _process(pid: int, newest_step: int, started: int | None, done: int | None) -> ProcessState:
    process = ProcessState(pid)
    process.steps.append(StepRecord(pid, newest_step, 1.0, 0.1, None, None, None))
    if started is not None:
        process.modules_started = ModulesStarted(t=1.0, first_step=started, steps=20)
    if done is not None:
        process.module_times = ModuleTimes(t=2.0, first_step=done, last_step=done + 19, steps=20)
    return process


def test_progress_counts_the_least_advanced_rank_and_stops_once_each_is_done() -> None:
    assert modules_progress([_process(1, 50, None, None)]) is None
    ranks = [_process(1, 61, 50, None), _process(2, 55, 50, None)]
    assert modules_progress(ranks) == "timing modules: 6/20 steps"
    assert modules_progress([_process(1, 80, 50, 50)]) is None
    # A second request after a finished period counts again.
    assert modules_progress([_process(1, 92, 90, 50)]) == "timing modules: 3/20 steps"
