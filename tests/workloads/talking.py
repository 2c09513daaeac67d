"""A small real training job that says known lines: `step N loss L` on stdout after each step,
and `warn: step N slow` on stderr every fifth step, each flushed at once, for `--steps` steps of
`--step-s` seconds each (the rest of a step sleeps). Lines from `--noise` are padding written
before the first step, so a test can give the log a long history."""

from __future__ import annotations

import argparse
import sys
import time

import torch
from torch import nn


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--steps", type=int, default=600)
    parser.add_argument("--step-s", type=float, default=0.1)
    parser.add_argument("--noise", type=int, default=0)
    args = parser.parse_args()
    for index in range(args.noise):
        print(f"noise {index}", flush=True)
    torch.manual_seed(0)
    model = nn.Linear(32, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    for step in range(args.steps):
        started_s = time.monotonic()
        inputs, targets = torch.randn(64, 32), torch.randn(64, 1)
        loss = nn.functional.mse_loss(model(inputs), targets)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        print(f"step {step} loss {loss.item():.4f}", flush=True)
        if step % 5 == 0:
            print(f"warn: step {step} slow", file=sys.stderr, flush=True)
        time.sleep(max(0.0, args.step_s - (time.monotonic() - started_s)))


if __name__ == "__main__":
    main()
