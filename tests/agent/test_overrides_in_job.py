"""The agent's overrides inside a real job: each knob takes effect, and is said once."""

from __future__ import annotations

import os
import sys
from dataclasses import replace
from pathlib import Path

from tests.tuning.running import agent_records
from torchtop.advice.plan import initial_plan
from torchtop.agent import hooks
from torchtop.agent.overrides import _loader_changes, requested
from torchtop.jobs.job import start_plan

PROBE = """
import torch
torch.set_num_threads(2)
model = torch.nn.Linear(4, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
model(torch.randn(2, 4)).sum().backward()
optimizer.step()
optimizer.zero_grad()
print("threads", torch.get_num_threads())
print("precision", torch.get_float32_matmul_precision())
print("foreach", optimizer.defaults["foreach"], optimizer.param_groups[0]["foreach"])
print("grad kept", model.weight.grad is not None)
print("cudnn.benchmark", torch.backends.cudnn.benchmark)
"""


def test_the_agent_applies_overrides_once_torch_is_imported() -> None:
    assert "knob overrides" in [name for name, _ in hooks.INSTALLERS], (
        "wire the hook: in agent/hooks.py, add ('knob overrides', overrides.install) to "
        "INSTALLERS (and `overrides` to the `from torchtop.agent import ...` line)"
    )


def test_each_supported_override_takes_effect_in_the_job_and_is_said(tmp_path: Path) -> None:
    overrides = {
        "torch.num_threads": 1,
        "torch.float32_matmul_precision": "medium",
        "optimizer.foreach": True,
        "optimizer.zero_grad_set_to_none": False,
        "torch.backends.cudnn.benchmark": True,
    }
    plan = initial_plan([sys.executable, "-c", PROBE], os.environ, str(tmp_path))
    plan = replace(plan, overrides=overrides)
    started = start_plan(plan, tmp_path / "run")
    assert started.process.wait(timeout=120) == 0, (tmp_path / "run" / "stderr.log").read_text()
    out = (tmp_path / "run" / "stdout.log").read_text().splitlines()
    assert out == [
        "threads 1",
        "precision medium",
        "foreach True True",
        "grad kept True",
        "cudnn.benchmark True",
    ]
    said = (tmp_path / "run" / "stderr.log").read_text()
    assert "[torchtop] override: set_num_threads(2 -> 1) by torchtop" in said
    assert "[torchtop] override: SGD(foreach=None -> True)" in said
    assert "[torchtop] override: zero_grad(set_to_none=True -> False)" in said
    notes = [n["message"] for n in agent_records(tmp_path / "run", "note")]
    assert len(notes) == len(set(notes)) and "override: SGD(foreach=None -> True)" in notes


def test_dataloader_overrides_leave_iterable_datasets_and_worker_less_loaders_alone() -> None:
    wanted = {"num_workers": 4, "persistent_workers": True, "prefetch_factor": 4}
    job_args = {"num_workers": 0, "persistent_workers": False, "prefetch_factor": None}
    assert _loader_changes(job_args, wanted, iterable=False) == {
        "num_workers": (0, 4), "persistent_workers": (False, True), "prefetch_factor": (None, 4)
    }  # fmt: skip
    assert _loader_changes(job_args, wanted, iterable=True) == {}
    assert _loader_changes(job_args, {"persistent_workers": True}, iterable=False) == {}


def test_a_malformed_overrides_variable_is_reported_not_applied() -> None:
    assert requested({"TORCHTOP_OVERRIDES": "{not json"}) == (
        {}, ["TORCHTOP_OVERRIDES is not JSON; no overrides applied"]
    )  # fmt: skip
    assert requested({"TORCHTOP_OVERRIDES": '{"torch.num_threads": 2}'}) == (
        {"torch.num_threads": 2}, []
    )  # fmt: skip
    assert requested({}) == ({}, [])
