"""A job that trains a few steps and then raises: its traceback's last line is known."""

from __future__ import annotations

import time

import torch

STEPS = 20
LAST_LINE = f"RuntimeError: planted failure after {STEPS} steps"


def train(steps: int = STEPS) -> None:
    """A few small steps, 20 ms apart (also `out_of_memory.py`'s, before its error)."""
    model = torch.nn.Linear(8, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(steps):
        model(torch.randn(4, 8)).sum().backward()
        optimizer.step()
        optimizer.zero_grad()
        time.sleep(0.02)


def main() -> None:
    train()
    print("trained", flush=True)
    raise RuntimeError(LAST_LINE.removeprefix("RuntimeError: "))


if __name__ == "__main__":
    main()
