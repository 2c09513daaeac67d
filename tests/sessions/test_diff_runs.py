"""`torchtop diff` of two real recorded runs that differ in their DataLoader workers: it names
`num_workers 0 -> 2` first (on the command line and as the agent recorded it), in the text and
the JSON, from the run folders and from the reports saved in them alike; says whether the step
difference is beyond the steps' spread; and puts the time that moved in the DataLoader, which
the change touches. The launch keeps the environment's speed variables, never a secret's."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import WORKLOADS
from torchtop.cli import main
from torchtop.report.diff_memory import memory_section
from torchtop.report.memory import size_words

TORCHTOP = [sys.executable, "-m", "torchtop"]
RUN_FOR_S = "120"  # a bound only: each job ends by itself after STEPS steps
STEPS = "60"
WORKERS = ("0", "2")


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The starved job with `--num-workers 0` and `2`, recorded side by side (this compares
    what they ran with, not their speed on a shared machine)."""
    root = tmp_path_factory.mktemp("diff-runs")
    env = {**os.environ, "OMP_NUM_THREADS": "1", "TORCH_FAKE_TOKEN": "not-to-be-kept"}
    folders = [root / f"workers-{n}" for n in WORKERS]
    jobs = [_record(folder, n, env) for folder, n in zip(folders, WORKERS, strict=True)]
    for job in jobs:
        _, err = job.communicate(timeout=180)
        assert job.returncode == 0, err
    return folders[0], folders[1]


def _record(folder: Path, workers: str, env: dict[str, str]) -> subprocess.Popen[str]:
    command = [*TORCHTOP, "run", "--headless", "--for", RUN_FOR_S, "--run-dir", str(folder)]
    job = [sys.executable, str(WORKLOADS / "starved_options.py"), "--steps", STEPS]
    job += ["--num-workers", workers]
    return subprocess.Popen(
        [*command, "--", *job],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )


def diff(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    status = main(["diff", *argv])
    captured = capsys.readouterr()
    assert status == 0, captured.err
    return captured.out


EXPECTED = [
    {"what": "command", "name": "--num-workers", "a": "0", "b": "2", "option": "num_workers"},
    {"what": "recorded", "name": "dataloader.num_workers", "a": 0, "b": 2},
]


def test_the_text_names_num_workers_0_to_2_before_any_figure(
    capsys: pytest.CaptureFixture[str], two_runs: tuple[Path, Path]
) -> None:
    out = diff(capsys, *map(str, two_runs), "--format", "text")
    heads = [line for line in out.splitlines() if line and line == line.upper() and line[0] != " "]
    assert heads[:3] == ["SETTINGS THAT DIFFER", "STEPS", "WHERE THE TIME MOVED (MS PER STEP)"]
    section = out.split("SETTINGS THAT DIFFER\n")[1].split("\n\n")[0].splitlines()
    rows = [line.split() for line in section[1:]]
    assert rows == [
        ["command", "--num-workers", "0", "->", "2"],
        ["recorded", "dataloader.num_workers", "0", "->", "2"],
    ]
    moved = out.split("WHERE THE TIME MOVED (MS PER STEP)\n")[1].split("\n\n")[0]
    assert "in dataloader, which dataloader.num_workers touches" in moved
    assert any(" noise: p50 " in line for line in out.split("STEPS\n")[1].splitlines()[:7])


def test_the_json_changes_begin_with_the_settings_that_differ(
    capsys: pytest.CaptureFixture[str], two_runs: tuple[Path, Path]
) -> None:
    document = json.loads(diff(capsys, *map(str, two_runs), "--format", "json"))
    found = document["changes"]
    assert next(iter(found)) == "settings"
    assert found["settings"] == EXPECTED
    assert found["settings_recorded"] == {"a": True, "b": True}
    assert found["moved"]["touched"] == ["dataloader"]
    assert found["moved"]["by"] == ["dataloader.num_workers"]
    assert found["noise"]["judged"] and found["noise"]["basis"] == "per-step times"
    a = document["a"]["settings"]
    assert a["agent"] and a["dataloader"]["num_workers"] == 0 and a["device"] == "cpu"
    assert a["env"] == document["b"]["settings"]["env"]


def test_the_reports_saved_in_the_run_folders_name_the_same_change(
    capsys: pytest.CaptureFixture[str], two_runs: tuple[Path, Path]
) -> None:
    saved = [str(folder / "report.json") for folder in two_runs]
    document = json.loads(diff(capsys, *saved, "--format", "json"))
    assert document["changes"]["inputs"]["a"]["json_report"] is True
    assert document["changes"]["settings"] == EXPECTED


def test_the_launch_keeps_the_speed_variables_of_the_environment_and_no_secret(
    two_runs: tuple[Path, Path],
) -> None:
    launch: dict[str, Any] = json.loads((two_runs[0] / "run.json").read_text())
    assert launch["env"]["OMP_NUM_THREADS"] == "1"
    assert "TORCH_FAKE_TOKEN" not in launch["env"]
    assert not any(name.startswith("TORCHTOP_") for name in launch["env"])


def test_the_memory_peaks_compared_are_the_host_peaks_analyze_prints(
    capsys: pytest.CaptureFixture[str], two_runs: tuple[Path, Path]
) -> None:
    memory = json.loads(diff(capsys, *map(str, two_runs), "--format", "json"))["changes"]["memory"]
    assert memory["available"] and memory["device"] == "host", memory
    (row,) = memory_section(memory).rows
    assert row[0] == "host peak resident set"
    for side, folder, figure in zip(("a", "b"), two_runs, row[1:3], strict=True):
        assert main(["analyze", str(folder)]) == 0
        printed = capsys.readouterr().out.split("MEMORY host\n")[1].splitlines()[0]
        # analyze's own words for the host, and the same figure in the diff's row
        assert printed.startswith(f"  peak {figure} resident set"), (printed, figure)
        assert figure == size_words(memory[f"{side}_peak_bytes"])
