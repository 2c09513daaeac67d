"""A tiny training job starved by its input: the Dataset sleeps per sample, no DataLoader workers.

Prints two fixed lines and exits with `--exit-status`, so a test can check that the agent
changes neither the job's output nor its exit status.
"""

from __future__ import annotations

import argparse
import sys

import torch
from sleepy import SleepyDataset
from torch import nn
from torch.utils.data import DataLoader

FEATURES = 64
CLASSES = 10


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--steps", type=int, default=14)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--sample-sleep-ms", type=float, default=3.0)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--shuffle", action="store_true")
    parser.add_argument("--exit-status", type=int, default=0)
    return parser.parse_args()


def main() -> int:
    args = parse_args()
    torch.set_num_threads(1)
    dataset = SleepyDataset(
        args.batch_size * args.steps, args.sample_sleep_ms / 1000, FEATURES, CLASSES, seed=None
    )
    loader = DataLoader(dataset, batch_size=args.batch_size, shuffle=args.shuffle)
    model = nn.Sequential(nn.Linear(FEATURES, 128), nn.ReLU(), nn.Linear(128, CLASSES))
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr)
    for inputs, labels in loader:
        optimizer.zero_grad()
        nn.functional.cross_entropy(model(inputs), labels).backward()
        optimizer.step()
    print(f"trained {args.steps} steps")
    print("last line from the job")
    return int(args.exit_status)


if __name__ == "__main__":
    sys.exit(main())
