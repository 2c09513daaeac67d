"""The job's own tracebacks hold no torchtop frame: an error raised inside `backward()` or a
DataLoader's `__next__` (both timed through wrappers) reads as it does without the agent, from
the job's line into torch's and the code that raised (`agent.tracebacks`)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.agent.running import run_job

# Three good steps (so the agent is in and timing), then a backward that raises in the job's
# own autograd Function; or a dataset that fails on its fourth item.
RAISES_IN_BACKWARD = """
import torch

class Planted(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        if Planted.fail:
            raise ValueError("planted failure in backward")
        return grad * 2

Planted.fail = False
model = torch.nn.Linear(4, 4)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(4):
    Planted.fail = step == 3
    Planted.apply(model(torch.randn(2, 4))).sum().backward()
    optimizer.step()
"""

RAISES_IN_DATASET = """
import torch
from torch.utils.data import DataLoader, Dataset

class Planted(Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, index):
        if index == 3:
            raise KeyError("planted failure in the dataset")
        return torch.randn(4)

model = torch.nn.Linear(4, 4)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for batch in DataLoader(Planted(), batch_size=1):
    model(batch).sum().backward()
    optimizer.step()
"""


def frames(stderr: str) -> list[str]:
    """The files of a traceback's frames, outermost first."""
    return re.findall(r'^  File "([^"]+)"', stderr, re.M)


@pytest.mark.parametrize(
    ("source", "last_line", "innermost"),
    [
        (RAISES_IN_BACKWARD, "ValueError: planted failure in backward", "<string>"),
        (RAISES_IN_DATASET, "KeyError: 'planted failure in the dataset'", "<string>"),
    ],
    ids=["backward", "dataloader"],
)
def test_an_error_raised_through_a_timed_call_shows_no_torchtop_frame(
    tmp_path: Path, source: str, last_line: str, innermost: str
) -> None:
    job = run_job(tmp_path / "run", ["-c", source])
    assert job.returncode == 1
    assert job.stderr.rstrip().endswith(last_line), job.stderr
    assert len(job.records("step")) >= 3  # the agent was in, timing these very calls
    files = frames(job.stderr)
    assert files[0] == "<string>" and files[-1] == innermost, files
    assert any("torch" in f for f in files), files  # torch's own frames are all kept
    assert not [f for f in files if "torchtop" in f], job.stderr
