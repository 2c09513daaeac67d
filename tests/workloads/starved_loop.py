"""The loop shared by the starved jobs: samples that sleep on "storage", a small MLP.

Shuffling is off and the data are seeded, so the losses (and the file `--out` writes) are the
same whatever the number of DataLoader workers: only the speed differs.
"""

from __future__ import annotations

import time
from pathlib import Path

import torch
from sleepy import SleepyDataset
from torch import nn
from torch.utils.data import DataLoader

FEATURES = 64
CLASSES = 10


def train(steps: int, num_workers: int, sleep_ms: float, out: Path | None) -> None:
    torch.manual_seed(0)
    torch.set_num_threads(1)
    batch_size = 8
    dataset = SleepyDataset(batch_size * 64, sleep_ms / 1000, FEATURES, CLASSES)
    loader = DataLoader(dataset, batch_size=batch_size, num_workers=num_workers)
    model = nn.Sequential(nn.Linear(FEATURES, 128), nn.ReLU(), nn.Linear(128, CLASSES))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    print(f"training {steps} steps", flush=True)
    losses: list[float] = []
    started_s = time.perf_counter()
    while len(losses) < steps:
        for inputs, labels in loader:
            optimizer.zero_grad()
            loss = nn.functional.cross_entropy(model(inputs), labels)
            loss.backward()
            optimizer.step()
            losses.append(round(loss.item(), 4))
            if len(losses) >= steps:
                break
    if out is not None:
        out.write_text("\n".join(map(str, losses)) + "\n")
    print(f"final loss {losses[-1]:.4f}", flush=True)
    print(f"rate: {steps / (time.perf_counter() - started_s):.2f} steps/s", flush=True)
