"""A tiny training job on in-memory tensors, which also runs its own profiler for a while.

Its own `torch.profiler` runs from step `--own-profiler-from` to `--own-profiler-to` and is
exported to `--own-trace`: the agent must not break it (a window open when it starts is
dropped) and must not open a window while it runs. It uses autocast, and first iterates a
small DataLoader with forked workers and one with spawned workers, which must stay silent.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--own-profiler-from", type=int, default=6)
    parser.add_argument("--own-profiler-to", type=int, default=10)
    parser.add_argument("--own-trace", type=Path, required=True)
    return parser.parse_args()


def touch_workers() -> None:
    """One pass over loaders whose workers inherit the agent (forked) or start it (spawned)."""
    side = TensorDataset(torch.arange(8.0))
    for context in ("fork", "spawn"):
        for _ in DataLoader(side, batch_size=4, num_workers=2, multiprocessing_context=context):
            pass


def main() -> int:
    args = parse_args()
    torch.set_num_threads(1)
    touch_workers()
    data = TensorDataset(
        torch.randn(32 * args.steps, 256), torch.randint(0, 10, (32 * args.steps,))
    )
    loader = DataLoader(data, batch_size=32)
    model = nn.Sequential(
        nn.Linear(256, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 10)
    )
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    own = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU])
    for step, (inputs, labels) in enumerate(loader):
        if step == args.own_profiler_from:
            own.start()
        optimizer.zero_grad()
        logits = model(inputs)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            loss = nn.functional.cross_entropy(logits, labels)
        loss.backward()
        optimizer.step()
        if step == args.own_profiler_to:
            own.stop()
            own.export_chrome_trace(str(args.own_trace))
    print("own trace written" if args.own_trace.stat().st_size > 0 else "own trace empty")
    return 0


if __name__ == "__main__":
    sys.exit(main())
