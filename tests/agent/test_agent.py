"""The agent in process, on a fake event file: failures become one note and never reach the job."""

from __future__ import annotations

import os
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import msgspec
import pytest

torch = pytest.importorskip("torch")

from torchtop.agent import hooks  # noqa: E402 - needs torch, imported above
from torchtop.agent.agent import Agent  # noqa: E402
from torchtop.agent.config import AgentConfig  # noqa: E402
from torchtop.agent.identity import read_identity  # noqa: E402
from torchtop.agent.profiler_window import ProfilerWindow  # noqa: E402
from torchtop.agent.sink import RecordSink  # noqa: E402
from torchtop.runs.journal import JournalReader  # noqa: E402
from torchtop.runs.records import JournalRecord  # noqa: E402


class ListWriter:
    def __init__(self, refuse: str = "") -> None:
        self.records: list[dict[str, Any]] = []
        self.refuse = refuse

    def write(self, record: JournalRecord) -> None:
        table = msgspec.to_builtins(record)
        if table["kind"] == self.refuse:
            raise OSError("disk full")
        self.records.append(table)

    def close(self) -> None:
        pass

    def kinds(self) -> list[str]:
        return [r["kind"] for r in self.records]


def make_agent(tmp_path: Path, writer: ListWriter, every_s: float = 0) -> Agent:
    config = AgentConfig(tmp_path, window_every_s=every_s, window_steps=2, window_first_step=1)
    return Agent(config, read_identity({}), RecordSink(lambda: writer, flush_every_s=0))


def test_a_failure_on_the_step_path_stops_the_agent_with_one_note(tmp_path: Path) -> None:
    writer = ListWriter(refuse="step")
    agent = make_agent(tmp_path, writer)
    for _ in range(3):
        agent.user_stepped()
    assert not agent.active
    (note,) = [r for r in writer.records if r["kind"] == "note"]
    assert note["message"].startswith("torchtop agent: step timing failed (OSError: disk full)")


def test_a_window_that_cannot_open_is_noted_once_and_steps_go_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(self: ProfilerWindow) -> None:
        raise RuntimeError("no profiler here")

    monkeypatch.setattr(ProfilerWindow, "open", refuse)
    writer = ListWriter()
    agent = make_agent(tmp_path, writer, every_s=0.001)
    for _ in range(6):
        agent.user_stepped()
    assert writer.kinds().count("step") == 6
    assert writer.kinds().count("note") == 1
    assert agent.plan.disabled


def test_saving_a_window_does_not_show_as_a_slow_step(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def slow_save(self: ProfilerWindow, epoch_ms: int) -> Path:
        time.sleep(0.3)
        return tmp_path / "traces" / f"w.{epoch_ms}.pt.trace.json.gz"

    monkeypatch.setattr(ProfilerWindow, "open", lambda self: None)
    monkeypatch.setattr(ProfilerWindow, "step_ended", lambda self: True)
    monkeypatch.setattr(ProfilerWindow, "save", slow_save)
    writer = ListWriter()
    agent = make_agent(tmp_path, writer, every_s=60)
    for _ in range(4):  # the window opens after step 0 and is saved after step 1
        agent.user_stepped()
    assert writer.kinds().count("window") == 1
    walls = [r["wall_s"] for r in writer.records if r["kind"] == "step"]
    assert max(walls[1:]) < 0.1


def test_bye_is_written_once_and_only_by_the_process_that_attached(tmp_path: Path) -> None:
    writer = ListWriter()
    agent = make_agent(tmp_path, writer)
    child = Agent(agent.config, replace(agent.identity, pid=-1), RecordSink(ListWriter))
    child.close()
    agent.close()
    agent.close()
    assert writer.kinds() == ["settings", "bye"]
    assert writer.records[-1]["reason"] == "exit"


def test_a_forked_child_writes_its_own_file_only_once_it_steps(tmp_path: Path) -> None:
    writer = ListWriter()
    agent = make_agent(tmp_path, writer)
    agent.start("2.x", [])
    agent.forked()  # as os.fork() calls it in the child (here: the same pid)
    events = tmp_path / "events" / f"agent-{os.getpid()}.jsonl"
    assert not events.exists()
    agent.user_stepped()
    assert [type(r).__name__ for r in JournalReader(events).read_new()] == [
        "Hello",
        "Step",
        "Settings",
    ]
    assert writer.kinds() == ["hello"]


def test_torch_compile_and_autocast_are_noticed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    autocast = torch.amp.autocast_mode.autocast
    monkeypatch.setattr(torch, "compile", lambda model, **kwargs: model)
    monkeypatch.setattr(autocast, "__enter__", autocast.__enter__)
    agent = make_agent(tmp_path, ListWriter())
    hooks.watch_compile(agent)
    hooks.watch_autocast(agent)
    with torch.autocast("cpu", enabled=False):
        pass
    assert (agent.facts.compiled, agent.facts.amp) == (False, False)
    model = torch.nn.Linear(2, 2)
    assert torch.compile(model) is model
    with torch.autocast("cpu", dtype=torch.bfloat16):
        pass
    assert (agent.facts.compiled, agent.facts.amp) == (True, True)


def test_a_failure_timing_backward_steps_never_reaches_the_jobs_backward(tmp_path: Path) -> None:
    writer = ListWriter(refuse="step")
    agent = make_agent(tmp_path, writer)
    weight = torch.ones(3, requires_grad=True)
    original = torch.autograd.backward
    hooks.time_backward(agent)
    try:
        for _ in range(3):
            (weight * 2).sum().backward()  # the job's own call: it must not raise
    finally:
        torch.autograd.backward = original
    assert weight.grad is not None and weight.grad.tolist() == [6.0, 6.0, 6.0]
    assert not agent.active
    (note,) = [r for r in writer.records if r["kind"] == "note"]
    assert note["message"].startswith("torchtop agent: step timing failed (OSError: disk full)")
