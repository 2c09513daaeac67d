"""The agent answers `RUN/requests/modules` in process: hooks from the next step end for the
configured number of steps, then none; a failure is one note and no hook left behind."""

from __future__ import annotations

import os
import time
from dataclasses import replace
from pathlib import Path

import pytest
import torch
from torch import nn
from torch.nn.modules import module as torch_module

from tests.agent.test_agent import ListWriter, make_agent
from torchtop.agent import agent as agent_module
from torchtop.agent.agent import Agent
from torchtop.agent.module_period import ModulePeriod
from torchtop.runs.layout import RunLayout


def global_hooks() -> int:
    return len(torch_module._global_forward_pre_hooks) + len(torch_module._global_forward_hooks)


def request(run_dir: Path) -> None:
    path = RunLayout(run_dir).modules_request
    path.parent.mkdir(parents=True, exist_ok=True)
    path.touch()
    later_ns = time.time_ns() + 10**9  # newer than the agent's start, whatever the fs's grain
    os.utime(path, ns=(later_ns, later_ns))


@pytest.fixture
def agent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Agent:
    monkeypatch.setattr(agent_module, "CHORES_EVERY_S", 0.0)  # look for requests every step
    made = make_agent(tmp_path, ListWriter())
    made.config = replace(made.config, module_steps=3)
    return made


def test_a_request_times_the_next_steps_then_leaves_no_hook(agent: Agent, tmp_path: Path) -> None:
    writer = agent.sink._open_writer()
    assert isinstance(writer, ListWriter)
    model = nn.Sequential(nn.Linear(2, 2), nn.ReLU())
    agent.user_stepped()
    request(tmp_path)
    agent.user_stepped()  # this step end installs the hooks: steps 2, 3 and 4 are timed
    assert global_hooks() == 2
    for _ in range(3):
        model(torch.zeros(2))
        agent.user_stepped()
    assert global_hooks() == 0
    assert all(not m._forward_hooks and not m._forward_pre_hooks for m in model.modules())
    model(torch.zeros(2))
    agent.user_stepped()
    (started,) = [r for r in writer.records if r["kind"] == "modules_started"]
    (times,) = [r for r in writer.records if r["kind"] == "module_times"]
    assert (started["first_step"], started["steps"]) == (2, 3)
    assert (times["first_step"], times["last_step"], times["steps"]) == (2, 4, 3)
    assert {m["path"]: m["calls"] for m in times["modules"]} == {
        "Sequential_0/Linear_0": 3,
        "Sequential_0/ReLU_0": 3,
        "Sequential_0": 3,
    }


def test_a_period_cut_by_the_exit_writes_what_it_timed_before_bye(
    agent: Agent, tmp_path: Path
) -> None:
    writer = agent.sink._open_writer()
    assert isinstance(writer, ListWriter)
    agent.user_stepped()
    request(tmp_path)
    agent.user_stepped()
    nn.Linear(2, 2)(torch.zeros(2))
    agent.user_stepped()
    agent.close()
    assert global_hooks() == 0
    assert writer.kinds()[-2:] == ["module_times", "bye"]
    assert writer.records[-2]["steps"] == 1


def test_hooks_that_cannot_be_installed_are_one_note_and_later_requests_are_ignored(
    agent: Agent, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    writer = agent.sink._open_writer()
    assert isinstance(writer, ListWriter)

    def refuse(period: ModulePeriod) -> None:
        raise RuntimeError("no global hooks here")

    monkeypatch.setattr(ModulePeriod, "start", refuse)
    agent.user_stepped()
    for _ in range(2):
        request(tmp_path)
        agent.user_stepped()
    assert global_hooks() == 0
    (note,) = [r for r in writer.records if r["kind"] == "note"]
    assert "module timing failed (RuntimeError: no global hooks here)" in note["message"]
    assert agent.active
