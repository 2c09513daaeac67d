"""`torchtop run` applies a torchtop.toml: which file, which command, what it announces, and a
broken or missing file as one line naming it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from torchtop.advice.plan import initial_plan
from torchtop.cli import main
from torchtop.errors import InputError
from torchtop.jobs.env import job_environment
from torchtop.sessions.run_config import resolve_config

TUNED = """\
command = ["python", "train.py", "--workers", "8"]
original_command = ["python", "train.py"]

[env]
OMP_NUM_THREADS = "1"

[overrides]
"dataloader.persistent_workers" = true
"""
ORIGINAL = ["python", "train.py"]
TUNED_COMMAND = ("python", "train.py", "--workers", "8")


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "torchtop.toml").write_text(TUNED)
    return tmp_path


def test_the_file_in_the_working_folder_turns_the_original_command_into_the_tuned_one(
    folder: Path,
) -> None:
    config = resolve_config(None, False, ORIGINAL, folder)
    assert config.path == folder / "torchtop.toml"
    assert config.command == TUNED_COMMAND
    env = job_environment(folder / "run", config.tuned.env, config.tuned.overrides)
    assert env["OMP_NUM_THREADS"] == "1"
    assert json.loads(env["TORCHTOP_OVERRIDES"]) == {"dataloader.persistent_workers": True}
    first, second = config.announcement()
    assert "applying" in first and str(folder / "torchtop.toml") in first
    assert "python train.py -> python train.py --workers 8" in first
    assert second == (
        "torchtop: environment: OMP_NUM_THREADS=1; overrides: dataloader.persistent_workers = True"
    )


def test_no_command_runs_the_files_command(folder: Path) -> None:
    assert resolve_config(None, False, [], folder).command == TUNED_COMMAND


def test_the_folders_file_is_not_applied_to_another_command(folder: Path) -> None:
    other = resolve_config(None, False, ["python", "eval.py"], folder)
    assert (other.path, other.command) == (None, ("python", "eval.py"))
    assert (other.tuned.env, other.tuned.overrides) == ({}, {})
    (line,) = other.announcement()
    assert "not applying ./torchtop.toml: it was tuned for `python train.py`" in line
    assert "--config torchtop.toml" in line


def test_config_applies_the_file_to_another_command_without_rewriting_it(folder: Path) -> None:
    other = resolve_config(str(folder / "torchtop.toml"), False, ["python", "eval.py"], folder)
    assert other.command == ("python", "eval.py")
    assert other.tuned.env["OMP_NUM_THREADS"] == "1"
    assert "the file's command is for another one" in other.announcement()[0]


SEES = """\
import json, os, sys
seen = {k: os.environ.get(k) for k in ("OMP_NUM_THREADS", "TORCHTOP_OVERRIDES")}
open(sys.argv[1], "w").write(json.dumps(seen))
"""


def test_a_script_beside_the_tuned_one_runs_with_nothing_of_its_file(tmp_path: Path) -> None:
    """`torchtop.toml` tuned for slow.py; `run -- python train.py` in the same folder once took
    its environment and overrides, said only as "(the file's command is for another one)"."""
    (tmp_path / "torchtop.toml").write_text(
        'command = ["python", "slow.py", "--workers", "3"]\n'
        'original_command = ["python", "slow.py"]\n'
        '[env]\nOMP_NUM_THREADS = "3"\n[overrides]\n"dataloader.num_workers" = 3\n'
    )
    (tmp_path / "train.py").write_text(SEES)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TORCHTOP_", "OMP_"))}
    torchtop = [sys.executable, "-m", "torchtop", "run", "--headless", "--run-dir", "run"]
    result = subprocess.run(
        [*torchtop, "--", sys.executable, "train.py", "seen.json"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env=env,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    seen = json.loads((tmp_path / "seen.json").read_text())
    assert seen == {"OMP_NUM_THREADS": None, "TORCHTOP_OVERRIDES": None}
    said = [line for line in result.stderr.splitlines() if "torchtop.toml" in line]
    assert len(said) == 1 and "tuned for `python slow.py`" in said[0], said


def test_no_config_applies_nothing_even_with_a_file_in_the_folder(folder: Path) -> None:
    config = resolve_config(None, True, ORIGINAL, folder)
    assert (config.path, config.command) == (None, tuple(ORIGINAL))
    assert (config.tuned.env, config.tuned.overrides) == ({}, {})
    assert config.announcement() == []


def test_a_folder_without_the_file_runs_the_command_as_given(tmp_path: Path) -> None:
    config = resolve_config(None, False, ORIGINAL, tmp_path)
    assert config.path is None and config.command == tuple(ORIGINAL)


def test_a_config_given_by_path_is_applied_wherever_the_run_starts(
    folder: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    config = resolve_config(str(folder / "torchtop.toml"), False, ORIGINAL, elsewhere)
    assert config.command == TUNED_COMMAND


def test_the_plan_for_relaunches_keeps_the_files_environment_and_overrides(folder: Path) -> None:
    config = resolve_config(None, False, ORIGINAL, folder)
    plan = config.plan(initial_plan(config.command, {"HOME": "/h"}, str(folder)))
    assert plan.env == {"HOME": "/h", "OMP_NUM_THREADS": "1"}
    assert plan.overrides == {"dataloader.persistent_workers": True}
    assert plan.command == TUNED_COMMAND


@pytest.mark.parametrize(
    "text",
    ['command = "python train.py"\n', "[overrides\n", 'env = "OMP_NUM_THREADS=1"\n'],
)
def test_a_broken_file_exits_2_with_one_line_naming_it(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    text: str,
) -> None:
    (tmp_path / "torchtop.toml").write_text(text)
    monkeypatch.chdir(tmp_path)
    assert main(["run", "--headless", "--", "python", "train.py"]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith(f"torchtop: {tmp_path / 'torchtop.toml'}: ")


def test_a_missing_config_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"missing\.toml: no such file"):
        resolve_config(str(tmp_path / "missing.toml"), False, ORIGINAL, tmp_path)
