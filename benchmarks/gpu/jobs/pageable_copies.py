"""Planted truth `memcpy`: large float32 batches copied from pageable memory every step.

The DataLoader hands out whole batches made ahead in ordinary (pageable) host memory
(`batch_size=None`, so loading costs nothing) and the loop moves each with `.to(device)`: no
`pin_memory`, no `non_blocking`. A batch of 64 MiB against one small matmul: run names `memcpy`
with `pageable-host-copies` and its pinned-memory fix (`dataloader.pin_memory`).
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

sys.path.insert(0, str(Path(__file__).resolve().parent))
from kit_loop import StepClock, announce, device_of, entry, parser, sized

FEATURES = 1024


class Batches(Dataset[torch.Tensor]):
    """A few batches made once, in pageable memory; indexing hands one out as it is."""

    def __init__(self, count: int, rows: int) -> None:
        self.batches = [torch.randn(rows, FEATURES) for _ in range(count)]

    def __len__(self) -> int:
        return 10**9

    def __getitem__(self, index: int) -> torch.Tensor:
        return self.batches[index % len(self.batches)]


def main(argv: list[str] | None = None) -> None:
    options = parser(__doc__.splitlines()[0])
    options.add_argument("--batch-mib", type=float, default=64.0)
    args = options.parse_args(argv)
    device = device_of(args)
    torch.manual_seed(0)
    rows = sized(int(args.batch_mib * 2**20 / (4 * FEATURES)), args.scale, 8)
    loader = DataLoader(Batches(4, rows), batch_size=None, num_workers=0)
    model = nn.Linear(FEATURES, 16).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    announce(
        "pageable-copies", device, [("rows", rows), ("batch_mib", rows * FEATURES * 4 / 2**20)]
    )
    clock = StepClock(args, device)
    for batch in loader:
        clock.begin()
        inputs = batch.to(device)
        optimizer.zero_grad(set_to_none=True)
        model(inputs).square().mean().backward()
        optimizer.step()
        if not clock.end():
            break


if __name__ == "__main__":
    entry(main)
