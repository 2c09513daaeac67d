"""Run folders written record by record, as an agent and a launcher would write them."""

from __future__ import annotations

from pathlib import Path

import pytest

from torchtop.runs.journal import JournalWriter, write_record
from torchtop.runs.layout import RunLayout
from torchtop.runs.records import Hello, LoaderSettings, RunRecord, Settings, Step


class FakeRun:
    """Writes a run folder the way the real writers do (the same JournalWriter and records)."""

    def __init__(self, root: Path) -> None:
        self.layout = RunLayout(root)
        self.layout.create()
        launch = RunRecord(kind="run", command=["python", "train.py"], pid=100, cpu_count=2)
        write_record(self.layout.run_json, launch)
        self.writers: dict[int, JournalWriter] = {}
        self.t = 1_700_000_000.0

    def agent(self, pid: int) -> JournalWriter:
        if pid not in self.writers:
            self.writers[pid] = JournalWriter(self.layout.agent_events(pid))
        return self.writers[pid]

    def hello(
        self,
        pid: int,
        rank: int | None = None,
        dataloader: LoaderSettings | None = None,
        step_signal: str | None = None,
    ) -> None:
        world_size = 2 if rank is not None else None
        self.agent(pid).write(Hello(t=self.t, pid=pid, rank=rank, world_size=world_size))
        settings = Settings(t=self.t, device="cpu", dataloader=dataloader, step_signal=step_signal)
        self.agent(pid).write(settings)

    def steps(
        self, pid: int, count: int, wall_s: float, data_wait_s: float, first: int = 0
    ) -> None:
        for i in range(first, first + count):
            self.t += wall_s
            step = Step(t=self.t, step=i, wall_s=wall_s, data_wait_s=data_wait_s)
            self.agent(pid).write(step)


@pytest.fixture
def fake_run(tmp_path: Path) -> FakeRun:
    return FakeRun(tmp_path / "run")
