"""The assessment is given its context (this machine, its name, the no-step wait) as a value:
it reads no variable and probes nothing itself, so the same inputs give the same report."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from tests.conftest import CONTEXT
from tests.fake_run import FakeRun
from tests.live.test_no_step_hint import silent_run
from torchtop.advice.machine import Machine
from torchtop.assess.context import NO_STEP_HINT_VARIABLE, read_context
from torchtop.assess.node_share import node_metrics
from torchtop.assess.run import assess
from torchtop.diagnosis.rules import load_rules
from torchtop.runs.state import load_run


def test_the_wait_before_the_no_step_hint_is_the_contexts_not_the_environments(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    state = load_run(silent_run(tmp_path / "run", 10).root)
    monkeypatch.setenv(NO_STEP_HINT_VARIABLE, "1")
    patient = assess(state, {}, load_rules(), context=CONTEXT).verdict.reason
    assert patient == "0 of the 5 steps needed seen so far"
    quick = dataclasses.replace(CONTEXT, no_step_hint_s=5.0)
    told = assess(state, {}, load_rules(), context=quick).verdict.reason
    assert told.startswith("no training step seen in 10 s")


def test_reading_the_context_takes_the_wait_from_the_variable() -> None:
    assert read_context({NO_STEP_HINT_VARIABLE: "2.5"}).no_step_hint_s == 2.5
    assert read_context({}).no_step_hint_s == 20.0
    assert read_context({}).frames is None and read_context({}, frames=True).frames is not None


def test_a_run_recorded_on_the_contexts_host_shares_the_contexts_cores(fake_run: FakeRun) -> None:
    for rank, pid in enumerate((100, 101)):
        fake_run.hello(pid, rank=rank)
        fake_run.steps(pid, 3, wall_s=0.1, data_wait_s=0.0)
    state = load_run(fake_run.layout.root)
    state.launch.host = "node-a"
    # Two ranks allowed 2 cores each, on a machine of 16: each keeps its 2.
    here = dataclasses.replace(CONTEXT, machine=Machine(16, 16), hostname="node-a")
    assert node_metrics(state, {"host_cpu_count": 2}, here) == {"local_ranks": 2, "rank_cores": 2}
    # Assessed on another host: the run's own machine (run.json: 2 cores) split in two.
    elsewhere = dataclasses.replace(here, hostname="node-b")
    assert node_metrics(state, {"host_cpu_count": 2}, elsewhere)["rank_cores"] == 1
