"""The demo's training job: a small MLP on synthetic data that waits on slow storage.

Each sample costs `--latency-ms` of simulated storage latency (a sleep, as a network file
system or a cold disk would cost), and the DataLoader runs with `--num-workers 0`, so the loop
spends most of each step waiting for its next batch: a real, planted `dataloader` bottleneck.
`--num-workers 4` (the fix torchtop offers) hides the latency behind the model's compute.
Run it as `python -m torchtop.demo.train`; torchtop runs it under its agent.
"""

from __future__ import annotations

import argparse
import time

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

FEATURES = 256
CLASSES = 10


class SlowStorageDataset(Dataset[tuple[torch.Tensor, torch.Tensor]]):
    """Synthetic samples, each read after `latency_s` of simulated storage latency."""

    def __init__(self, size: int, latency_s: float, seed: int) -> None:
        self.size = size
        self.latency_s = latency_s
        self.seed = seed

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, index: int) -> tuple[torch.Tensor, torch.Tensor]:
        time.sleep(self.latency_s)
        generator = torch.Generator().manual_seed(self.seed + index)
        features = torch.randn(FEATURES, generator=generator)
        label = torch.randint(0, CLASSES, (1,), generator=generator)[0]
        return features, label


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=100_000, help="stop after this many steps")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--num-workers", type=int, default=0)
    parser.add_argument("--pin-memory", action="store_true")
    parser.add_argument("--latency-ms", type=float, default=5.0, help="storage latency per sample")
    parser.add_argument("--seed", type=int, default=0)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    torch.manual_seed(args.seed)
    dataset = SlowStorageDataset(size=50_000, latency_s=args.latency_ms / 1000, seed=args.seed)
    loader = DataLoader(
        dataset,
        batch_size=args.batch_size,
        shuffle=True,
        num_workers=args.num_workers,
        pin_memory=args.pin_memory,
    )
    model = nn.Sequential(
        nn.Linear(FEATURES, 1024),
        nn.ReLU(),
        nn.Linear(1024, 1024),
        nn.ReLU(),
        nn.Linear(1024, CLASSES),
    )
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    print(
        f"training: batch {args.batch_size}, num_workers {args.num_workers}, "
        f"{args.latency_ms:g} ms storage latency per sample",
        flush=True,
    )
    step, started = 0, time.perf_counter()
    while step < args.steps:
        for features, labels in loader:
            optimizer.zero_grad(set_to_none=True)
            loss = loss_fn(model(features), labels)
            loss.backward()
            optimizer.step()
            step += 1
            if step % 50 == 0:
                rate = step / (time.perf_counter() - started)
                print(f"step {step}  loss {loss.item():.3f}  {rate:.1f} steps/s", flush=True)
            if step >= args.steps:
                break
    return 0


if __name__ == "__main__":
    try:
        raise SystemExit(main())
    except KeyboardInterrupt:
        # torchtop stops the demo with SIGINT when its time is up: end quietly.
        raise SystemExit(0) from None
