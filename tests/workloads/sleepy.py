"""Input that waits: the datasets the workloads share, each sample served after a sleep.

The workloads run as scripts (`python tests/workloads/starved_loop.py`, under torchrun or the
agent alike), so Python puts this folder first on `sys.path` and `from sleepy import ...` finds
this module wherever the job is started from (tests/test_workloads.py checks it).
"""

from __future__ import annotations

import time

import torch
from torch.utils.data import Dataset


class SleepyDataset(Dataset[tuple[torch.Tensor, torch.Tensor]]):
    """`length` samples of `features` values, labels below `classes`, made up front from
    `seed` (None: torch's global generator), each served after sleeping `sleep_s`."""

    def __init__(
        self,
        length: int,
        sleep_s: float,
        features: int = 64,
        classes: int = 10,
        seed: int | None = 0,
    ) -> None:
        generator = None if seed is None else torch.Generator().manual_seed(seed)
        self.inputs = torch.randn(length, features, generator=generator)
        self.labels = torch.randint(0, classes, (length,), generator=generator)
        self.sleep_s = sleep_s

    def __len__(self) -> int:
        return len(self.labels)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, torch.Tensor]:
        if self.sleep_s:
            time.sleep(self.sleep_s)
        return self.inputs[index], self.labels[index]


class SleepyStorage(Dataset[tuple[torch.Tensor, torch.Tensor]]):
    """`length` samples read as from slow storage: each made on demand (seeded by its index,
    `features` values, label `index % 10`) after sleeping `sleep_s`."""

    def __init__(self, length: int, sleep_s: float, features: int = 64) -> None:
        self.length, self.sleep_s, self.features = length, sleep_s, features

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, index: int) -> tuple[torch.Tensor, torch.Tensor]:
        time.sleep(self.sleep_s)
        generator = torch.Generator().manual_seed(index)
        return torch.randn(self.features, generator=generator), torch.tensor(index % 10)
