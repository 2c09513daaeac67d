"""A CPU job whose steps are math, with its thread count and DataLoader workers chosen.

`--threads N` calls `torch.set_num_threads(N)` (left at torch's default otherwise), `--workers W`
loads batches in W DataLoader worker processes. The job prints its own rate at the end, as
`rate: X steps/s`, so a test can compare torchtop's figures with the job's.
"""

from __future__ import annotations

import argparse
import time

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--workers", type=int, default=0)
    parser.add_argument("--steps", type=int, default=40)
    args = parser.parse_args()
    if args.threads is not None:
        torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    data = TensorDataset(
        torch.randn(64 * args.steps, 512), torch.randint(0, 10, (64 * args.steps,))
    )
    loader = DataLoader(data, batch_size=64, num_workers=args.workers)
    model = nn.Sequential(nn.Linear(512, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(),
                          nn.Linear(1024, 10))  # fmt: skip
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    start = time.perf_counter()
    for features, labels in loader:
        loss = nn.functional.cross_entropy(model(features), labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    print(f"rate: {args.steps / (time.perf_counter() - start):.2f} steps/s")


if __name__ == "__main__":
    main()
