"""`tune` on real CPU training jobs: each bottleneck fixed by the route it needs, each kept fix
measured faster, a fix that does not help reverted and reported.

Each test runs the job for real, several times (baseline, then each trial's rounds), with
short trials (`QUICK`: at most three rounds of short runs): about a minute each on 2 cores.
"""

from __future__ import annotations

import json
import os
import re
import tomllib
from dataclasses import replace
from pathlib import Path

import pytest

from tests.conftest import RULES_DIR
from tests.tuning.running import QUICK, agent_records, job
from torchtop.advice.machine import this_machine
from torchtop.advice.plan import initial_plan, plan_fix
from torchtop.diagnosis.rules import load_rules
from torchtop.model.findings import Fix
from torchtop.model.plan import LaunchPlan
from torchtop.runs.records import LoaderSettings, Settings
from torchtop.sessions.tune import TuneCommand, tune_session
from torchtop.trials.trial import TrialSettings, run_trial
from torchtop.tuning.tune import TuneOptions, TuneResult, tune

pytestmark = pytest.mark.slow
TREE = load_rules(RULES_DIR)
MEASURED_LINE = (
    r"torchtop tune: trial 1 (before|after)-\d: \d+\.\d\d steps/s"
    r"( \(other processes: \d+\.\d cores\))?"  # the machine's other load meanwhile
)


def assert_honest(result: TuneResult) -> None:
    """Every kept fix was measured faster by the margin; every other one says it was reverted."""
    for trial in result.trials:
        if trial.kept:
            assert trial.speedup is not None and trial.speedup >= 1 + QUICK.min_gain
            assert trial.trial_steps_per_s is not None
            assert trial.trial_steps_per_s > trial.baseline_steps_per_s
        else:
            assert "reverted" in trial.reason


def test_tune_gives_a_starved_job_more_workers_through_its_own_num_workers_option(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    toml_path, report_path = tmp_path / "torchtop.toml", tmp_path / "report.json"
    options = TuneCommand(
        write=toml_path, run_dir=tmp_path / "run", report=str(report_path),
        steps=QUICK.steps, warmup_steps=QUICK.warmup_steps, min_duration_s=QUICK.min_duration_s,
        max_trials=1, output_format="json", budget_s=QUICK.budget_s,
    )  # fmt: skip
    # 10 ms a sample: workers pay about 4x at any load (at 3 ms, 8 workers at load 12 on 2 cores
    # measured 0.83x, rightly reverted).
    assert tune_session(job("starved_options", "--sample-sleep-ms", "10"), options, TREE) == 0
    # The trial's events, printed as tune always printed them; stdout is the report alone.
    printed = capsys.readouterr()
    said = printed.err.splitlines()
    measured = [line for line in said if re.fullmatch(MEASURED_LINE, line)]
    # The baseline stands for before-1; the rounds alternate their order (ABBA...).
    labels = [line.split()[4].rstrip(":") for line in measured]
    orders = {0: ("after", "before"), 1: ("before", "after")}
    expected = ["after-1", *(f"{v}-{k}" for k in range(2, 7) for v in orders[k % 2])]
    assert len(labels) % 2 == 1 and labels == expected[: len(labels)]
    assert any(line.startswith("torchtop tune: trial 1: kept: faster beyond noise: ")
               for line in said), said  # fmt: skip
    assert all(line.endswith(" cores)") for line in measured), measured

    report = json.loads(report_path.read_text())
    assert json.loads(printed.out) == report
    (trial,) = report["trials"]
    assert trial["kept"] is True and trial["speedup"] > 1.5
    assert trial["fixes"][0]["knob"] == "dataloader.num_workers"
    assert trial["fixes"][0]["apply"] == "arg"
    assert trial["trial_steps_per_s"] > trial["baseline_steps_per_s"]
    workers = str(trial["fixes"][0]["value"])
    assert tomllib.loads(toml_path.read_text())["command"][-2:] == ["--num-workers", workers]
    assert (tmp_path / "run" / "trials" / "01.json").is_file()
    # The job itself ran as written: its own output, with the option it was given.
    after = tmp_path / "run" / "trials" / "01" / "after-1"
    assert (after / "stdout.log").read_text().startswith("training 100000 steps\n")
    argvs = [r["argv"] for r in agent_records(after, "hello")]
    assert [a[-2:] for a in argvs] == [["--num-workers", workers]]


def test_tune_gives_a_starved_job_without_options_more_workers_by_override(
    tmp_path: Path,
) -> None:
    env = {**os.environ, "STARVED_SLEEP_MS": "10"}  # see the test above
    # Up to eight rounds, two past tune's default: at load 16 on 2 cores four rounds read 1.85x,
    # 1.95x, 0.81x and 2.27x, too spread for the 99% interval to keep the fix; in CI, beside the
    # other worker's jobs, six rounds read 3.41x, 2.22x, 5.91x, 6.56x, 0.84x and 4.99x: 5 of 6
    # for the fix, and the rule asked for about one more round. A round costs ~18 s, and only
    # an undecided trial runs it.
    options = replace(QUICK, max_rounds=TuneOptions().max_rounds + 2)
    result = tune(job("starved_bare"), options, TREE, tmp_path / "run", env=env)
    assert_honest(result)
    (trial,) = result.trials
    assert trial.kept, trial.reason
    assert [(f.knob, f.route) for f in trial.fixes] == [("dataloader.num_workers", "override")]
    assert result.final.command == tuple(job("starved_bare"))
    workers = trial.fixes[0].value
    said = f"override: DataLoader(num_workers=0 -> {workers})"
    assert f"[torchtop] {said}" in (trial.after[0].run_dir / "stderr.log").read_text()
    assert said in [n["message"] for n in agent_records(trial.after[0].run_dir, "note")]


def test_tune_leaves_the_thread_pool_of_a_job_with_dataloader_workers_alone(
    tmp_path: Path,
) -> None:
    """PyTorch runs each DataLoader worker on one thread, so two workers beside a pool of one
    thread per core were never the oversubscription the old rule counted (threads x (workers +
    1)); its fix, OMP_NUM_THREADS=1, made pytorch/examples imagenet with -j 2 0.58x as fast.
    tune must not try it (nor any other cut of the pool) on such a job."""
    result = tune(job("oversubscribed"), QUICK, TREE, tmp_path / "run")
    assert_honest(result)
    tried = [(f.knob, f.value) for trial in result.trials for f in trial.fixes]
    assert ("env.OMP_NUM_THREADS", 1) not in tried, tried
    assert all(knob != "torch.num_threads" for knob, _ in tried), tried
    assert result.final.command == tuple(job("oversubscribed"))


def test_more_workers_on_a_compute_bound_job_are_measured_and_reverted(tmp_path: Path) -> None:
    before = initial_plan(job("compute_until_stopped"), os.environ, str(tmp_path))
    fix = Fix("dataloader.num_workers", 4, "override", "Load batches in 4 worker processes.")
    after = plan_fix(
        fix, before, Settings(dataloader=LoaderSettings(num_workers=0)), this_machine()
    )
    assert isinstance(after, LaunchPlan)
    quick = TrialSettings(min_gain=QUICK.min_gain, min_duration_s=0.5, max_rounds=3)
    trial = run_trial(before, after, 8, 3, tmp_path / "run", 60.0, settings=quick)
    assert not trial.kept
    assert "reverted" in trial.reason
    written = json.loads((tmp_path / "run" / "trials" / "01.json").read_text())
    assert written["kept"] is False and written["reason"] == trial.reason
    assert written["fixes"][0]["apply"] == "override"
