"""Relaunching real jobs: only the changed knob differs, and a stop leaves no process behind."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest

from tests.tuning.running import JOBS, agent_records, job
from torchtop.advice.plan import initial_plan
from torchtop.jobs.job import start_plan
from torchtop.jobs.processes import is_alive, job_tree
from torchtop.model.trials import Span
from torchtop.runs.state import RunWatcher
from torchtop.trials.measure import WINDOWS, MeasureError, measure

TORCHRUN = ["-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2"]


def bare_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("TORCHTOP_")}


def test_a_relaunch_with_an_override_changes_the_knob_and_nothing_else(tmp_path: Path) -> None:
    args = ["--steps", "30", "--exit-status", "3"]
    bare = subprocess.run(
        [*job("starved_options", *args), "--out", str(tmp_path / "bare.txt")],
        env=bare_env(), capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    command = [*job("starved_options", *args), "--out", str(tmp_path / "relaunched.txt")]
    plan = initial_plan(command, bare_env(), str(tmp_path))
    plan = replace(plan, overrides={"dataloader.num_workers": 2})
    relaunched = start_plan(plan, tmp_path / "run")
    assert relaunched.process.wait(timeout=120) == bare.returncode == 3

    run = tmp_path / "run"
    # The job's own output is the same but for its measured rate (a timing, not a setting).
    assert without_rate((run / "stdout.log").read_text()) == without_rate(bare.stdout)
    assert (tmp_path / "relaunched.txt").read_text() == (tmp_path / "bare.txt").read_text()
    said = "override: DataLoader(num_workers=0 -> 2)"
    assert (run / "stderr.log").read_text().count(f"[torchtop] {said}") == 1
    assert [n["message"] for n in agent_records(run, "note")] == [said]
    assert agent_records(run, "settings")[-1]["dataloader"]["num_workers"] == 2


def wait_for_steps(run_dir: Path, processes: int, timeout_s: float = 90.0) -> None:
    watcher = RunWatcher(run_dir)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if len(watcher.poll().training_processes) >= processes:
            return
        time.sleep(0.2)
    raise AssertionError(f"fewer than {processes} processes stepped in {timeout_s} s")


@pytest.mark.slow
@pytest.mark.parametrize("ignore_signals", [False, True], ids=["graceful", "deaf-workers"])
def test_stopping_a_torchrun_job_leaves_no_process_of_it_behind(
    tmp_path: Path, ignore_signals: bool
) -> None:
    env = {**bare_env(), "IGNORE_STOP_SIGNALS": "1" if ignore_signals else "0"}
    plan = initial_plan(
        [sys.executable, *TORCHRUN, str(JOBS / "ddp_forever.py")], env, str(tmp_path)
    )
    started = start_plan(plan, tmp_path / "run")
    wait_for_steps(tmp_path / "run", processes=2)
    tree = job_tree(started.pid)
    assert len(tree) >= 3  # torchrun and its two workers
    ending = started.finish(grace_s=2.0)
    assert ending.how == "stopped"
    survivors = [p for p in tree if is_alive(p)]
    assert survivors == []


def test_a_job_that_ends_before_its_measurement_is_reported_not_measured(tmp_path: Path) -> None:
    plan = initial_plan(job("starved_options", "--steps", "6"), bare_env(), str(tmp_path))
    with pytest.raises(MeasureError, match=r"only \d+ of 20 steady-state steps.*the job exited"):
        measure(plan, tmp_path / "run", Span(steps=20, warmup_steps=3), timeout_s=60)


def test_a_measurement_leaves_out_the_warm_up_and_then_captures_a_profiler_window(
    tmp_path: Path,
) -> None:
    plan = initial_plan(job("starved_options"), bare_env(), str(tmp_path))
    measured = measure(plan, tmp_path / "run", Span(steps=8, warmup_steps=4), 60, window=True)
    assert len(measured.step_wall_s) == 8 and measured.warmup_steps >= 4
    assert measured.warmup is not None and measured.warmup.steps == measured.warmup_steps
    assert measured.has_window
    # WINDOWS of them, one after the other, all after the measured steps: pooled, one window's
    # few steps do not name the cause alone.
    windows = agent_records(tmp_path / "run", "window")
    assert len(windows) == WINDOWS == 2
    steps = [r["step"] for r in agent_records(tmp_path / "run", "step")]
    assert windows[0]["first_step"] >= 12 and min(steps) <= 4
    assert windows[1]["first_step"] > windows[0]["last_step"]
    assert measured.ending.how == "stopped"
    assert measured.argv is not None and measured.argv[0].endswith("starved_options.py")


def without_rate(output: str) -> str:
    """`output` without the job's `rate: N steps/s` line."""
    return "".join(
        line for line in output.splitlines(keepends=True) if not line.startswith("rate:")
    )
