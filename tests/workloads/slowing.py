"""A DataLoader-starved job (its samples sleep on "storage", `--num-workers` 0 by default) that
slows down when told to: once the file named by `SLOW_WHEN` exists, every step also waits
`SLOW_EXTRA_MS`, as if another job had landed on the machine. The fix torchtop offers (more
workers) pays until then; after, the job no longer runs as its trial said.

It prints each step's time by its own clock (`step N S`: N counted from 0 as torchtop's agent
counts steps, S seconds from the end of the step before), the outside truth that the
dashboard's figures are checked against.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import torch
from sleepy import SleepyStorage
from torch import nn
from torch.utils.data import DataLoader

FEATURES = 64


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--num-workers", type=int, default=0)
    parser.add_argument("--sample-sleep-ms", type=float, default=5.0)
    args = parser.parse_args()
    slow_when = Path(os.environ["SLOW_WHEN"]) if os.environ.get("SLOW_WHEN") else None
    extra_s = float(os.environ.get("SLOW_EXTRA_MS", "100")) / 1000
    torch.manual_seed(0)
    torch.set_num_threads(1)
    loader = DataLoader(
        SleepyStorage(100_000, args.sample_sleep_ms / 1000, FEATURES),
        batch_size=8,
        num_workers=args.num_workers,
    )
    model = nn.Sequential(nn.Linear(FEATURES, 128), nn.ReLU(), nn.Linear(128, 10))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    ended = time.perf_counter()
    for step, (inputs, labels) in enumerate(loader):
        if slow_when is not None and slow_when.exists():
            time.sleep(extra_s)
        optimizer.zero_grad()
        nn.functional.cross_entropy(model(inputs), labels).backward()
        optimizer.step()
        now = time.perf_counter()
        print(f"step {step} {now - ended:.6f}", flush=True)
        ended = now


if __name__ == "__main__":
    main()
