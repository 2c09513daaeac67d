"""Asking a job's agents for something: a request file touched in the run folder.

Every agent answers a request file whose modification time is newer than the last it answered
(`agent.window_plan.RequestWatcher`), so one touch reaches every rank and nobody deletes it.
A run folder several nodes' launchers share has each node's agents under `nodes/<node>/`, so a
request there is touched in every node's folder.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from torchtop.runs.identity import node_folders
from torchtop.runs.layout import RunLayout


def touch_request(run_dir: Path, which: Callable[[RunLayout], Path]) -> int:
    """Touch `which(layout)` in `run_dir` and in each node's folder under it; how many."""
    folders = [run_dir, *node_folders(run_dir)]
    for folder in folders:
        path = which(RunLayout(folder))
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch()
    return len(folders)
