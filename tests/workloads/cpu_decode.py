"""A CPU job whose Dataset decodes on the CPU: the ImageNet trainer's `-j 0` case in miniature.

Each sample is a zlib-compressed blob decompressed in `__getitem__` (single-threaded C, as PIL's
JPEG decode is), worth about 5% of the step with the defaults; the model's math runs on
`--threads` intra-op threads (2: this machine's cores). `--workers W` loads in W worker
processes, so the same script is both sides of an A/B. Prints `rate: X steps/s` over its steps
after the first few (torch's and the allocator's warm-up), so a benchmark can compare rounds.
"""

from __future__ import annotations

import argparse
import time
import zlib

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

FEATURES = 1024
WARMUP_STEPS = 3


class CompressedSamples(Dataset[tuple[torch.Tensor, torch.Tensor]]):
    """Samples stored compressed (`blob_kb` each before compression), decoded on access."""

    def __init__(self, size: int, blob_kb: int) -> None:
        values = max(blob_kb * 1024, FEATURES)
        noise = torch.randint(0, 4, (values,), generator=torch.Generator().manual_seed(0))
        self.blob = zlib.compress(noise.to(torch.uint8).numpy().tobytes(), 6)
        self.size = size

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, index: int) -> tuple[torch.Tensor, torch.Tensor]:
        raw = zlib.decompress(self.blob)
        values = torch.frombuffer(bytearray(raw[:FEATURES]), dtype=torch.uint8)
        return values.float() / 3.0, torch.tensor(index % 10)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--workers", type=int, default=0)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--blob-kb", type=int, default=16, help="each sample's decoded size")
    parser.add_argument("--batch-size", type=int, default=64)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    data = CompressedSamples(args.batch_size * args.steps, args.blob_kb)
    loader = DataLoader(data, batch_size=args.batch_size, num_workers=args.workers)
    model = nn.Sequential(nn.Linear(FEATURES, 2048), nn.ReLU(), nn.Linear(2048, 2048), nn.ReLU(),
                          nn.Linear(2048, 10))  # fmt: skip
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    start = time.perf_counter()
    for step, (features, labels) in enumerate(loader):
        if step == WARMUP_STEPS:
            start = time.perf_counter()
        loss = nn.functional.cross_entropy(model(features), labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    counted = args.steps - WARMUP_STEPS
    print(f"rate: {counted / (time.perf_counter() - start):.2f} steps/s", flush=True)


if __name__ == "__main__":
    main()
