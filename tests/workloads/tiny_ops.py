"""A job whose steps are Python and operator dispatch (many tiny ops), run for `--seconds`."""

from __future__ import annotations

import argparse
import time

import torch
from torch import nn


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=9.0)
    args = parser.parse_args()
    torch.manual_seed(0)
    layers = nn.ModuleList(nn.Linear(8, 8) for _ in range(64))
    optimizer = torch.optim.SGD(layers.parameters(), lr=0.01)
    end = time.perf_counter() + args.seconds
    while time.perf_counter() < end:
        x = torch.randn(4, 8)
        for layer in layers:
            x = torch.tanh(layer(x)) + 0.01 * x
        loss = x.pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


if __name__ == "__main__":
    main()
