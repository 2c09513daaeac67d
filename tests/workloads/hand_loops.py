"""Training loops that mark their steps in different ways, each printing its own step count.

- `sgd`: weights updated by hand (`p.data.add_(p.grad, alpha=-lr)`), no `torch.optim`, no
  DataLoader: only `backward()` marks the steps (pytorch/examples word_language_model's loop).
- `checkpoint`: `sgd` through reentrant activation checkpointing, which calls `backward()`
  again inside each `backward()`.
- `accumulate`: a DataLoader and an optimizer that steps once every `--accumulate` backwards.
- `loader`: evaluation over a DataLoader under `torch.no_grad()`: only batches mark the steps.
- `explicit`: DataLoader, backward, optimizer and `torchtop.step()` every step.
- `none`: work in a loop with none of these, for `--seconds`.
"""

from __future__ import annotations

import argparse
import sys
import time

import torch
from torch import nn
from torch.utils.checkpoint import checkpoint
from torch.utils.data import DataLoader, TensorDataset

from torchtop.agent.api import step


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "mode", choices=["sgd", "checkpoint", "accumulate", "loader", "explicit", "none"]
    )
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--accumulate", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=3.0)
    return parser.parse_args()


def model_and_data(batches: int) -> tuple[nn.Module, DataLoader[tuple[torch.Tensor, ...]]]:
    torch.manual_seed(0)
    data = TensorDataset(torch.randn(16 * batches, 64), torch.randint(0, 4, (16 * batches,)))
    model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 4))
    return model, DataLoader(data, batch_size=16)


def hand_sgd(steps: int, checkpointed: bool = False) -> int:
    model, _ = model_and_data(1)
    inputs = torch.randn(16, 64, requires_grad=checkpointed)
    labels = torch.randint(0, 4, (16,))
    for _ in range(steps):
        model.zero_grad()
        logits = checkpoint(model, inputs, use_reentrant=True) if checkpointed else model(inputs)
        nn.functional.cross_entropy(logits, labels).backward()
        for p in model.parameters():
            assert p.grad is not None
            p.data.add_(p.grad, alpha=-0.1)
        time.sleep(0.01)
    return steps


def accumulate(steps: int, every: int) -> int:
    model, loader = model_and_data(steps * every)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    updates = 0
    for index, (inputs, labels) in enumerate(loader):
        (nn.functional.cross_entropy(model(inputs), labels) / every).backward()
        time.sleep(0.003)
        if (index + 1) % every == 0:
            optimizer.step()
            optimizer.zero_grad()
            updates += 1
    return updates


def evaluate(steps: int) -> int:
    model, loader = model_and_data(steps)
    with torch.no_grad():
        for inputs, _ in loader:
            model(inputs)
            time.sleep(0.01)
    return steps


def explicit(steps: int) -> int:
    model, loader = model_and_data(steps)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for inputs, labels in loader:
        optimizer.zero_grad()
        nn.functional.cross_entropy(model(inputs), labels).backward()
        optimizer.step()
        time.sleep(0.01)
        step()
    return steps


def no_signal(seconds: float) -> int:
    weights = torch.randn(64, 64)
    deadline_s = time.monotonic() + seconds
    while time.monotonic() < deadline_s:
        (weights @ weights).sum().item()
        time.sleep(0.01)
    return 0


def main() -> int:
    args = parse_args()
    if args.mode in ("sgd", "checkpoint"):
        done = hand_sgd(args.steps, checkpointed=args.mode == "checkpoint")
    elif args.mode == "accumulate":
        done = accumulate(args.steps, args.accumulate)
    elif args.mode == "loader":
        done = evaluate(args.steps)
    elif args.mode == "explicit":
        done = explicit(args.steps)
    else:
        done = no_signal(args.seconds)
    print(f"steps {done}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
