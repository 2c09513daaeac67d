"""A small CPU training job that times itself and prints its own rate, the outside truth that
torchtop's step figures are checked against.

It times its steps the way a user's log would: `perf_counter` after each `optimizer.step()`,
from the end of its own warm-up (its first `--warmup` steps) to the end of its last step, and
prints `job: N steps in T s = R steps/s`. `--workers` with `--sample-sleep-ms` makes the input
pipeline bursty: several worker processes each sleep through a batch, so batches arrive in
bursts, and every epoch restarts the workers (a pause each `--epoch-steps` steps).
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings

import torch
from sleepy import SleepyDataset
from torch import nn
from torch.utils.data import DataLoader

FEATURES = 256
CLASSES = 10


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--steps", type=int, default=120)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--workers", type=int, default=0)
    parser.add_argument("--sample-sleep-ms", type=float, default=0.0)
    parser.add_argument("--epoch-steps", type=int, default=0, help="0: one epoch of --steps")
    parser.add_argument("--width", type=int, default=2048)
    return parser.parse_args()


def main() -> int:
    args = parse_args()
    # More workers than this machine's cores is the point of the bursty variant.
    warnings.filterwarnings("ignore", message="This DataLoader will create")
    torch.manual_seed(0)
    torch.set_num_threads(1)
    epoch_steps = args.epoch_steps or args.steps
    dataset = SleepyDataset(
        args.batch_size * epoch_steps, args.sample_sleep_ms / 1000, FEATURES, CLASSES
    )
    loader = DataLoader(dataset, batch_size=args.batch_size, num_workers=args.workers)
    model = nn.Sequential(
        nn.Linear(FEATURES, args.width),
        nn.ReLU(),
        nn.Linear(args.width, args.width),
        nn.ReLU(),
        nn.Linear(args.width, CLASSES),
    )
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    done, started_s = 0, 0.0
    while done < args.steps:
        for inputs, labels in loader:
            optimizer.zero_grad()
            nn.functional.cross_entropy(model(inputs), labels).backward()
            optimizer.step()
            done += 1
            if done == args.warmup:
                started_s = time.perf_counter()
            if done == args.steps:
                break
    elapsed_s = time.perf_counter() - started_s
    timed = args.steps - args.warmup
    print(f"job: {timed} steps in {elapsed_s:.3f} s = {timed / elapsed_s:.2f} steps/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
