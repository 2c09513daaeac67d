"""A job that ends no step gets told why and how to mark its steps, not a count of zero; and the
signal that marks a job's steps is named in its report."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import CONTEXT, WORKLOADS
from tests.fake_run import FakeRun
from torchtop.assess.context import NO_STEP_HINT_S
from torchtop.assess.run import assess
from torchtop.diagnosis.rules import load_rules
from torchtop.runs.journal import JournalWriter, write_record
from torchtop.runs.layout import RunLayout
from torchtop.runs.records import Hello, HostSample, RunRecord, Settings
from torchtop.runs.state import load_run

HAND_LOOPS = WORKLOADS / "hand_loops.py"
STARTED_AT = 1_700_000_000.0


def silent_run(root: Path, watched_s: float) -> RunLayout:
    """A run whose agent said hello and whose launcher sampled for `watched_s`: no step."""
    layout = RunLayout(root)
    layout.create()
    launch = RunRecord(
        kind="run", command=["python", "lm.py"], pid=7, cpu_count=2, started_at=STARTED_AT
    )
    write_record(layout.run_json, launch)
    JournalWriter(layout.agent_events(7)).write(Hello(t=STARTED_AT + 3, pid=7))
    host = JournalWriter(layout.samples("host"))
    for second in range(int(watched_s) + 1):
        host.write(HostSample(t=STARTED_AT + second, processes=[]))
    return layout


def test_a_job_with_no_step_after_the_wait_is_told_how_to_mark_its_steps(tmp_path: Path) -> None:
    layout = silent_run(tmp_path / "run", NO_STEP_HINT_S + 5)
    report = assess(load_run(layout.root), {}, load_rules(), context=CONTEXT)
    assert report.verdict.bottleneck == "unknown"
    reason = report.verdict.reason
    assert reason.startswith(f"no training step seen in {NO_STEP_HINT_S + 5:.0f} s")
    assert "backward()" in reason and "torchtop.step()" in reason
    assert "steps needed" not in reason


def test_a_job_whose_backward_steps_wait_for_its_optimizer_is_told_so(tmp_path: Path) -> None:
    layout = silent_run(tmp_path / "run", NO_STEP_HINT_S + 5)
    settings = Settings(t=STARTED_AT + 4, step_signal_held="backward")
    JournalWriter(layout.agent_events(7)).write(settings)
    reason = assess(load_run(layout.root), {}, load_rules(), context=CONTEXT).verdict.reason
    assert reason.startswith("no training step counted in")
    assert "an optimizer exists that has not stepped yet" in reason


def test_a_job_just_started_is_still_counting_its_steps(tmp_path: Path) -> None:
    layout = silent_run(tmp_path / "run", NO_STEP_HINT_S / 2)
    reason = assess(load_run(layout.root), {}, load_rules(), context=CONTEXT).verdict.reason
    assert reason == "0 of the 5 steps needed seen so far"


def test_the_report_names_the_signal_that_marked_the_steps(fake_run: FakeRun) -> None:
    fake_run.hello(100, step_signal="backward")
    fake_run.steps(100, 20, wall_s=0.1, data_wait_s=0.08)
    report = assess(load_run(fake_run.layout.root), {}, load_rules(), context=CONTEXT)
    assert "steps marked by backward() calls (no optimizer step seen)" in report.job.notes


@pytest.mark.slow
def test_run_on_a_loop_with_no_signal_says_no_step_was_seen(tmp_path: Path) -> None:
    env = {**os.environ, "TORCHTOP_NO_STEP_HINT_S": "2"}
    command = [sys.executable, str(HAND_LOOPS), "none", "--seconds", "60"]
    watch = ["--headless", "--for", "12", "--run-dir", str(tmp_path / "r")]
    torchtop = [sys.executable, "-m", "torchtop", "run", *watch, "--", *command]
    result = subprocess.run(
        torchtop, capture_output=True, text=True, timeout=90, env=env, check=False
    )
    assert result.returncode == 0, result.stderr
    report = json.loads((tmp_path / "r" / "report.json").read_text())
    assert report["bottleneck"] == "unknown"
    assert "no training step seen in" in result.stdout
    assert "call torchtop.step() once per step" in result.stdout
    # The headless progress repeats an unchanged verdict every 5 s: by 12 s it has said it.
    assert "no training step seen in" in result.stderr, "the headless progress says it too"
