"""The training loop the planted jobs share: it prints its own rate from its own clock.

Every `every` steps it prints `step N time T s` (seconds since its first batch was asked for),
so a long bare run's steps/s comes from the job itself, with no agent in the process. Runs until
`steps` or until interrupted (SIGINT ends it quietly, as the benchmark stops it).
"""

from __future__ import annotations

import time
from collections.abc import Iterable

import torch
from torch import nn


def train(
    loader: Iterable[tuple[torch.Tensor, torch.Tensor]],
    model: nn.Module,
    steps: int,
    every: int = 25,
) -> None:
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    step, started = 0, time.perf_counter()
    print(f"training with {torch.get_num_threads()} intra-op threads", flush=True)
    try:
        while step < steps:
            for inputs, labels in loader:
                optimizer.zero_grad(set_to_none=True)
                nn.functional.cross_entropy(model(inputs), labels).backward()
                optimizer.step()
                step += 1
                if step % every == 0:
                    print(f"step {step} time {time.perf_counter() - started:.4f} s", flush=True)
                if step >= steps:
                    break
    except KeyboardInterrupt:
        pass


def mlp(features: int, hidden: int, classes: int = 10) -> nn.Module:
    return nn.Sequential(
        nn.Linear(features, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
        nn.Linear(hidden, classes),
    )  # fmt: skip
