"""Real processes for the collectors to watch: a script started here, ended with its children."""

from __future__ import annotations

import contextlib
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import msgspec
import psutil
import pytest

Spawn = Callable[..., subprocess.Popen[str]]


def written(record: object) -> Any:
    """A collector's record as its journal line reads back: the JSON the sampler writes (None
    where it returned none)."""
    return msgspec.json.decode(msgspec.json.encode(record))


def end_tree(root: subprocess.Popen[str]) -> None:
    """Kill the process this test started and every descendant of it, by pid."""
    try:
        family = [psutil.Process(root.pid), *psutil.Process(root.pid).children(recursive=True)]
    except psutil.NoSuchProcess:
        family = []
    for process in reversed(family):
        with contextlib.suppress(psutil.NoSuchProcess):
            process.kill()
    # SIGKILL is final; the orphaned children are reaped by init, not waited for here.
    root.wait(timeout=10)


@pytest.fixture
def spawn(tmp_path: Path) -> Iterator[Spawn]:
    """spawn(source, name=..., command=...): run a script, wait until it prints "ready".

    `command(script_path)` gives the command line (default: this interpreter on the script).
    """
    started: list[subprocess.Popen[str]] = []

    def start(
        source: str,
        name: str = "job.py",
        command: Callable[[str], list[str]] | None = None,
    ) -> subprocess.Popen[str]:
        script = tmp_path / name
        script.write_text(textwrap.dedent(source), encoding="utf-8")
        argv = command(str(script)) if command else [sys.executable, str(script)]
        child = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True, cwd=tmp_path)
        started.append(child)
        assert child.stdout is not None
        line = child.stdout.readline()  # the script prints "ready" once it is in place
        assert line.strip() == "ready", f"{name} did not get ready (said {line!r})"
        return child

    yield start
    for child in started:
        end_tree(child)
