"""`torchtop rules --rules DIR` over a copy of the shipped rules with one mistake planted: exit
status 2 and one line on stderr naming the file and the key."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import RULES_DIR

EXIT_BAD_INPUT = 2


def torchtop_rules(folder: Path, cache: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "torchtop", "rules", "--rules", str(folder)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**os.environ, "TORCHTOP_CACHE_DIR": str(cache)},
    )


@pytest.mark.parametrize(
    ("name", "old", "new", "key"),
    [
        pytest.param(
            "dataloader-starved.toml",
            'severity = "low"',
            'severty = "high"',
            "unknown key 'severty' (did you mean 'severity'?)",
            id="misspelt key",
        ),
        pytest.param(
            "dataloader-starved.toml",
            'apply = "override"\ndescription = "Keep workers',
            'apply = "override"\ndescripton = "Keep workers',
            "unknown key 'fixes[1].descripton' (did you mean 'description'?)",
            id="misspelt key in a fix",
        ),
        pytest.param(
            "dataloader-starved.toml",
            'knob = "dataloader.persistent_workers"',
            'knob = "dataloader.persistant_workers"',
            "fixes[1].knob: unknown knob 'dataloader.persistant_workers'",
            id="unknown knob",
        ),
        pytest.param(
            "dataloader-starved.toml",
            'severity = "low"',
            'severity = "critical"',
            "severity: unknown severity 'critical'",
            id="bad severity",
        ),
        pytest.param(
            "cpu-math-bound.toml",
            'value = "physical cores"',
            'value = "cores/(workers+1)"',
            "fixes[0].value: 'cores/(workers+1)' is not a value of env.OMP_NUM_THREADS",
            id="bad value expression",
        ),
    ],
)
def test_a_planted_mistake_exits_2_with_one_line_naming_the_file_and_the_key(
    tmp_path: Path, name: str, old: str, new: str, key: str
) -> None:
    folder = tmp_path / "rules"
    shutil.copytree(RULES_DIR, folder)
    assert torchtop_rules(folder, tmp_path / "cache").returncode == 0  # and a tree is cached
    path = folder / name
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))
    done = torchtop_rules(folder, tmp_path / "cache")
    assert done.returncode == EXIT_BAD_INPUT
    assert done.stdout == ""
    (line,) = done.stderr.splitlines()
    assert f"{path}: {key}" in line
