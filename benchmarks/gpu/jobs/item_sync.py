"""Planted truth `sync-in-loop`: `loss.item()` every step, then host work while the GPU idles.

Each step queues ~15 ms of float32 matmuls, reads the loss back with `.item()` (the host waits
for the whole queue) and then spends `--host-ms` on the host (a stand-in for logging and
bookkeeping), during which the GPU has nothing queued. Run names `sync-in-loop` and its fix
points at the `.item()` line below (marked KIT-SYNC; the kit finds its number in this file).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parent))
from kit_loop import StepClock, announce, device_of, entry, parser, sized

SYNC_MARK = "KIT-SYNC"


def main(argv: list[str] | None = None) -> None:
    options = parser(__doc__.splitlines()[0])
    options.add_argument("--width", type=int, default=4096)
    options.add_argument("--host-ms", type=float, default=10.0)
    args = options.parse_args(argv)
    device = device_of(args)
    torch.manual_seed(0)
    width = sized(args.width, args.scale, 8)
    model = nn.Sequential(nn.Linear(width, width), nn.ReLU(), nn.Linear(width, width)).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-4)
    inputs = torch.randn(width, width, device=device)
    announce("item-sync", device, [("width", width), ("host_ms", args.host_ms)])
    clock, losses = StepClock(args, device), []
    while True:
        clock.begin()
        optimizer.zero_grad(set_to_none=True)
        loss = model(inputs).square().mean()
        loss.backward()
        optimizer.step()
        going = clock.end()
        losses.append(loss.item())  # KIT-SYNC: the planted synchronisation
        time.sleep(args.host_ms / 1000)
        if not going:
            break


if __name__ == "__main__":
    entry(main)
