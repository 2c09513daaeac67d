"""`bye` says how the interpreter ended, and each step says how long its backward() took."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.agent.running import run_job

pytestmark = pytest.mark.slow

LOOP = """
import sys, torch
model = torch.nn.Linear(8, 8)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(5):
    model(torch.randn(4, 8)).sum().backward()
    optimizer.step()
"""


@pytest.mark.parametrize(
    ("ending", "status"),
    [("", 0), ("sys.exit(3)", 3), ("raise RuntimeError('boom')", 1), ("sys.exit('bad')", 1)],
    ids=["normal", "sys-exit-3", "uncaught-exception", "exit-message"],
)
def test_bye_carries_the_exit_status_the_process_ended_with(
    tmp_path: Path, ending: str, status: int
) -> None:
    job = run_job(tmp_path / "run", ["-c", LOOP + ending])
    assert job.returncode == status, job.stderr
    (bye,) = job.records("bye")
    assert bye["exit_code"] == status
    assert "signal" not in bye


def test_an_uncaught_keyboard_interrupt_ends_by_sigint(tmp_path: Path) -> None:
    job = run_job(tmp_path / "run", ["-c", LOOP + "raise KeyboardInterrupt"])
    (bye,) = job.records("bye")
    assert bye["signal"] == "SIGINT"


def test_each_step_records_its_time_in_backward_within_its_wall(tmp_path: Path) -> None:
    job = run_job(tmp_path / "run", ["-c", LOOP])
    steps = [s for s in job.records("step") if s["wall_s"] is not None]
    assert len(steps) == 4
    assert all(0 < s["backward_s"] < s["wall_s"] for s in steps)
