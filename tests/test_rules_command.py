"""`torchtop rules --rules DIR` over a copy of the shipped rules with one mistake planted: exit
status 2 and one line on stderr naming the file and the key."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.diagnosis.test_strict_loading import MISTAKES, edit, shipped_copy

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


# One of each kind of mistake the issue names, from the loader's own list, through the CLI.
THROUGH_THE_CLI = {
    "misspelt key",
    "misspelt key in a fix",
    "unknown knob",
    "unknown severity",
    "value expression the planner cannot resolve",
}


@pytest.mark.parametrize(
    ("name", "old", "new", "message"), [m for m in MISTAKES if m.id in THROUGH_THE_CLI]
)
def test_a_planted_mistake_exits_2_with_one_line_naming_the_file_and_the_key(
    tmp_path: Path, name: str, old: str, new: str, message: str
) -> None:
    folder = shipped_copy(tmp_path)
    assert torchtop_rules(folder, tmp_path / "cache").returncode == 0  # and a tree is cached
    path = edit(folder, name, old, new)
    done = torchtop_rules(folder, tmp_path / "cache")
    assert done.returncode == EXIT_BAD_INPUT
    assert done.stdout == ""
    (line,) = done.stderr.splitlines()
    assert f"{path}: {message}" in line
