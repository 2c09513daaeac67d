"""A job starved by sleep-bound input: each sample waits on "storage", `--num-workers 0`.

Unlike the demo (5 ms a sample, a small model: an 8x gain), the loads here are shorter against a
heavier model, so workers recover a smaller share of the step: a moderate gain to predict.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch
from sleepy import SleepyStorage
from torch.utils.data import DataLoader

sys.path.insert(0, str(Path(__file__).resolve().parent))
from own_rate import mlp, train

FEATURES = 256


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=10**9)
    parser.add_argument("--num-workers", type=int, default=0)
    parser.add_argument("--sample-sleep-ms", type=float, default=0.5)
    args = parser.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(1)
    dataset = SleepyStorage(20_000, args.sample_sleep_ms / 1000, FEATURES)
    loader = DataLoader(dataset, batch_size=32, shuffle=True, num_workers=args.num_workers)
    train(loader, mlp(FEATURES, 1024), args.steps)


if __name__ == "__main__":
    main()
