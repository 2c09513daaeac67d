"""Run folders written record by record, as an agent and a launcher would write them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from torchtop.runs.journal import JournalWriter, write_once
from torchtop.runs.layout import RUN_SCHEMA, RunLayout


class FakeRun:
    """Writes a run folder the way the real writers do (the same JournalWriter)."""

    def __init__(self, root: Path) -> None:
        self.layout = RunLayout(root)
        self.layout.create()
        write_once(
            self.layout.run_json,
            {
                "schema": RUN_SCHEMA,
                "kind": "run",
                "command": ["python", "train.py"],
                "pid": 100,
                "cpu_count": 2,
            },
        )
        self.writers: dict[int, JournalWriter] = {}
        self.t = 1_700_000_000.0

    def agent(self, pid: int) -> JournalWriter:
        if pid not in self.writers:
            self.writers[pid] = JournalWriter(self.layout.agent_events(pid))
        return self.writers[pid]

    def hello(self, pid: int, rank: int | None = None, **settings: Any) -> None:
        self.agent(pid).write(
            {
                "kind": "hello",
                "t": self.t,
                "pid": pid,
                "rank": rank,
                "world_size": 2 if rank is not None else None,
            }
        )
        self.agent(pid).write({"kind": "settings", "t": self.t, "device": "cpu", **settings})

    def steps(
        self, pid: int, count: int, wall_s: float, data_wait_s: float, first: int = 0
    ) -> None:
        for i in range(first, first + count):
            self.t += wall_s
            self.agent(pid).write(
                {
                    "kind": "step",
                    "t": self.t,
                    "step": i,
                    "wall_s": wall_s,
                    "data_wait_s": data_wait_s,
                    "h2d_s": None,
                    "sync_s": None,
                }
            )


@pytest.fixture
def fake_run(tmp_path: Path) -> FakeRun:
    return FakeRun(tmp_path / "run")
