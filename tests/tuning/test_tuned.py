"""torchtop.toml: the tuned setup written for reuse, read back, and the tune report's trials."""

from __future__ import annotations

import json
import tomllib
from dataclasses import replace
from pathlib import Path

from torchtop.advice.plan import initial_plan
from torchtop.jobs.env import job_environment
from torchtop.model.plan import AppliedFix
from torchtop.model.trials import Trial
from torchtop.trials.measure import Measurement
from torchtop.tuning.summary import render_summary, tune_report
from torchtop.tuning.tune import TuneResult
from torchtop.tuning.tuned import load_tuned, shell_line, write_tuned

CONTRACT_TRIAL_KEYS = {"fixes", "baseline_steps_per_s", "trial_steps_per_s", "speedup", "kept"}


def result(tmp_path: Path) -> TuneResult:
    original = initial_plan(["python", "train.py", "--num-workers", "0"], {"HOME": "/h"}, "/w")
    workers = AppliedFix("dataloader.num_workers", 8, "arg", "More workers.")
    threads = AppliedFix("env.OMP_NUM_THREADS", 1, "env", "Fewer threads.")
    pinned = AppliedFix("dataloader.persistent_workers", True, "override", "Keep workers.")
    final = replace(
        original,
        command=("python", "train.py", "--num-workers", "8"),
        env={"HOME": "/h", "OMP_NUM_THREADS": "1"},
        overrides={"dataloader.persistent_workers": True},
        fixes=(workers, threads, pinned),
        changes=("override dataloader.persistent_workers: False -> True",),
    )
    slow = Measurement(tmp_path / "b", (0.2,) * 20, 8)
    fast = Measurement(tmp_path / "a", (0.05,) * 20, 8)
    trial = Trial(1, (workers, threads, pinned), True, "faster beyond noise: 4.00x", (slow,),
                  (fast,), 1e-9, original, final, 12.0)  # fmt: skip
    return TuneResult(tmp_path, original, final, (trial,), (), slow, None, "no untried fix applies")


def test_the_tuned_file_is_toml_with_the_command_the_changed_env_and_the_overrides(
    tmp_path: Path,
) -> None:
    path = tmp_path / "torchtop.toml"
    write_tuned(path, result(tmp_path))
    data = tomllib.loads(path.read_text())
    assert data["command"] == ["python", "train.py", "--num-workers", "8"]
    assert data["env"] == {"OMP_NUM_THREADS": "1"}
    assert data["overrides"] == {"dataloader.persistent_workers": True}
    assert data["bind"] == {}
    text = path.read_text()
    assert "# Run it again with:" in text
    assert "5.00 -> 20.00 steps/s" in text


def test_a_binding_the_user_wrote_survives_a_rewrite(tmp_path: Path) -> None:
    path = tmp_path / "torchtop.toml"
    path.write_text('[bind]\n"train.batch_size" = "--bs"\n')
    write_tuned(path, result(tmp_path))
    tuned = load_tuned(path)
    assert tuned.bind == {"train.batch_size": "--bs"}
    assert tuned.command == ("python", "train.py", "--num-workers", "8")


def test_the_tuned_setup_relaunches_with_its_env_and_overrides_for_the_agent(
    tmp_path: Path,
) -> None:
    path = tmp_path / "torchtop.toml"
    tuned = write_tuned(path, result(tmp_path))
    extra = job_environment(tmp_path / "run", tuned.env, tuned.overrides)
    assert extra["OMP_NUM_THREADS"] == "1"
    assert json.loads(extra["TORCHTOP_OVERRIDES"]) == {"dataloader.persistent_workers": True}
    # The file sets the environment too: `torchtop run` with it reproduces the whole setup.
    assert shell_line(tuned) == "torchtop run -- python train.py --num-workers 8"
    assert shell_line(tuned, path) == (
        f"torchtop run --config {path} -- python train.py --num-workers 8"
    )
    assert tuned.original_command == ("python", "train.py", "--num-workers", "0")


def test_a_setup_without_overrides_runs_as_a_plain_command_with_its_variables(
    tmp_path: Path,
) -> None:
    plain = replace(result(tmp_path), final=replace(result(tmp_path).final, overrides={}))
    tuned = write_tuned(tmp_path / "torchtop.toml", plain)
    assert shell_line(tuned) == "OMP_NUM_THREADS=1 python train.py --num-workers 8"


def test_an_absent_file_reads_as_empty(tmp_path: Path) -> None:
    assert load_tuned(tmp_path / "none.toml").command == ()


def test_the_report_lists_each_trial_in_the_contracts_shape(tmp_path: Path) -> None:
    document = tune_report(result(tmp_path))
    assert document["source"]["kind"] == "tune"
    (trial,) = document["trials"]
    assert set(trial) >= CONTRACT_TRIAL_KEYS
    assert trial["speedup"] == 4.0 and trial["kept"] is True
    assert trial["fixes"][0] == {
        "knob": "dataloader.num_workers", "value": 8, "apply": "arg", "description": "More workers."
    }  # fmt: skip
    assert document["tune"]["final_command"] == ["python", "train.py", "--num-workers", "8"]
    json.dumps(document)


def test_the_summary_names_each_trial_and_the_final_command_and_environment(
    tmp_path: Path,
) -> None:
    text = render_summary(result(tmp_path), tmp_path / "torchtop.toml")
    assert "trial 1: override dataloader.persistent_workers: False -> True" in text
    assert "5.00 -> 20.00 steps/s, measured 4.00x: kept" in text
    assert "command: python train.py --num-workers 8" in text
    assert "environment: OMP_NUM_THREADS: unset -> 1" in text
    assert "written to" in text
