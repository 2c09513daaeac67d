"""Planted truth `dataloader`: a conv net whose Dataset sleeps per sample, `num_workers=0`.

Each sample waits `--sample-sleep-ms` on simulated storage in the training process itself, so a
batch of 64 costs ~128 ms of loading against a few ms of GPU work: run names `dataloader` with
`dataloader-single-process`, and attach (stacks only) must see the DataLoader frames.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

sys.path.insert(0, str(Path(__file__).resolve().parent))
from kit_loop import StepClock, announce, device_of, entry, parser, sized


class SlowStorage(Dataset[tuple[torch.Tensor, torch.Tensor]]):
    def __init__(self, size: int, side: int, sleep_s: float) -> None:
        self.size, self.side, self.sleep_s = size, side, sleep_s

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, index: int) -> tuple[torch.Tensor, torch.Tensor]:
        time.sleep(self.sleep_s)
        return torch.rand(3, self.side, self.side), torch.tensor(index % 10)


def conv_net(width: int) -> nn.Module:
    return nn.Sequential(
        nn.Conv2d(3, width, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(width, width * 2, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
        nn.Flatten(), nn.Linear(width * 2, 10),
    )  # fmt: skip


def main(argv: list[str] | None = None) -> None:
    options = parser(__doc__.splitlines()[0])
    options.add_argument("--sample-sleep-ms", type=float, default=2.0)
    options.add_argument("--batch-size", type=int, default=64)
    args = options.parse_args(argv)
    device = device_of(args)
    torch.manual_seed(0)
    side, batch = sized(64, args.scale, 8), sized(args.batch_size, args.scale, 2)
    dataset = SlowStorage(100_000, side, args.sample_sleep_ms / 1000)
    loader = DataLoader(dataset, batch_size=batch, shuffle=True, num_workers=0)
    model = conv_net(sized(64, args.scale, 4)).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    announce(
        "input-bound",
        device,
        [("batch", batch), ("side", side), ("sleep_ms", args.sample_sleep_ms)],
    )
    clock = StepClock(args, device)
    going = True
    while going:
        for images, labels in loader:
            clock.begin()
            images, labels = images.to(device), labels.to(device)
            optimizer.zero_grad(set_to_none=True)
            nn.functional.cross_entropy(model(images), labels).backward()
            optimizer.step()
            going = clock.end()
            if not going:
                break


if __name__ == "__main__":
    entry(main)
