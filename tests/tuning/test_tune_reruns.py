"""What tune leaves behind works: the command it prints reruns the tuned job (its override
applied, its speed kept), and a job whose steps the agent cannot see is told so."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from tests.conftest import RULES_DIR, WORKLOADS
from tests.tuning.running import QUICK, agent_records, job
from torchtop.advice.plan import initial_plan
from torchtop.diagnosis.rules import load_rules
from torchtop.model.trials import Span
from torchtop.sessions.tune import TuneCommand, tune_session
from torchtop.trials.measure import measure
from torchtop.tuning.summary import render_summary
from torchtop.tuning.tune import TuneResult
from torchtop.tuning.tuned import write_tuned

pytestmark = pytest.mark.slow
TREE = load_rules(RULES_DIR)
HAND_LOOPS = WORKLOADS / "hand_loops.py"
RERUN_S = 12
WORKERS = 2


def quick(tmp_path: Path) -> TuneCommand:
    return TuneCommand(
        write=tmp_path / "torchtop.toml", run_dir=tmp_path / "run",
        report=str(tmp_path / "report.json"), steps=QUICK.steps,
        warmup_steps=QUICK.warmup_steps, min_duration_s=QUICK.min_duration_s, max_trials=1,
    )  # fmt: skip


def steady_rate(run_dir: Path, warmup_steps: int) -> float:
    walls: list[float] = [
        s["wall_s"]
        for s in agent_records(run_dir, "step")
        if s["wall_s"] is not None and s["step"] >= warmup_steps
    ]
    assert len(walls) >= 20, walls
    return len(walls) / sum(walls)


def test_the_command_tune_prints_reruns_the_tuned_job_with_its_override(tmp_path: Path) -> None:
    # The tuned setup as tune would have kept it, measured for real the way a trial measures
    # it; the keep decision itself is the trial's business, not this test's.
    original = initial_plan(job("starved_bare"), dict(os.environ), str(tmp_path))
    final = replace(original, overrides={"dataloader.num_workers": WORKERS})
    span = Span(QUICK.steps, QUICK.warmup_steps, RERUN_S / 2)
    measured = measure(final, tmp_path / "trial", span, QUICK.run_timeout_s)
    result = TuneResult(tmp_path, original, final, (), (), measured, None, "as tuned")
    toml = tmp_path / "torchtop.toml"
    write_tuned(toml, result)
    (line,) = [s for s in render_summary(result, toml).splitlines() if s.startswith("to run")]
    words = shlex.split(line.removeprefix("to run it: "))
    assert words[:4] == ["torchtop", "run", "--config", str(toml)]

    rerun_dir = tmp_path / "rerun"
    watch = ["--headless", "--for", str(RERUN_S), "--run-dir", str(rerun_dir)]
    rerun = subprocess.run(
        [sys.executable, "-m", "torchtop", "run", *watch, *words[2:]],
        capture_output=True, text=True, timeout=120, check=False, cwd=tmp_path,
    )  # fmt: skip
    assert rerun.returncode == 0, rerun.stderr
    assert f"overrides: dataloader.num_workers = {WORKERS}" in rerun.stderr
    assert f"override: DataLoader(num_workers=0 -> {WORKERS})" in rerun.stderr
    settings = agent_records(rerun_dir, "settings")[-1]
    assert settings["overrides"] == {"dataloader.num_workers": WORKERS}
    assert settings["dataloader"]["num_workers"] == WORKERS
    # Loosely (a noisy shared machine): the rerun runs at the measured tuned speed; without
    # the override it would run at about half of it.
    rate = steady_rate(rerun_dir, QUICK.warmup_steps)
    assert rate == pytest.approx(measured.steps_per_s, rel=0.35), (rate, measured.steps_per_s)


def test_tune_on_a_job_whose_steps_are_not_seen_says_no_steps_were_detected(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    command = [sys.executable, str(HAND_LOOPS), "none", "--seconds", "3"]
    assert tune_session(command, quick(tmp_path), TREE) == 2
    said = capsys.readouterr().err
    assert "no steps were detected" in said
    assert "call torchtop.step() once per step" in said
    assert "steady-state steps" not in said
