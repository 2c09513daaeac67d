"""Planted truth `memory-near-capacity`: most of the card held, a small model trained beside it.

The job allocates one block so that `--fill` (default 0.93) of the device's memory is in use by
its caching allocator, keeps it for its whole life, and trains a small MLP. Run names
`memory-near-capacity` (peak allocated over 90% of capacity). On the CPU nothing is held.
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parent))
from kit_loop import StepClock, announce, device_of, entry, parser, sized

HEADROOM_BYTES = 512 * 2**20


def hold(device: torch.device, fill: float) -> torch.Tensor | None:
    """One block that brings the device's used memory to `fill` of its capacity."""
    if device.type != "cuda":
        return None
    free_bytes, total_bytes = torch.cuda.mem_get_info(device)
    wanted = int(total_bytes * fill) - (total_bytes - free_bytes)
    wanted = min(wanted, free_bytes - HEADROOM_BYTES)
    return torch.empty(max(wanted, 0), dtype=torch.uint8, device=device)


def main(argv: list[str] | None = None) -> None:
    options = parser(__doc__.splitlines()[0])
    options.add_argument("--fill", type=float, default=0.93)
    options.add_argument("--width", type=int, default=2048)
    args = options.parse_args(argv)
    device = device_of(args)
    torch.manual_seed(0)
    width = sized(args.width, args.scale, 8)
    model = nn.Sequential(nn.Linear(width, width), nn.ReLU(), nn.Linear(width, 10)).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    inputs = torch.randn(1024, width, device=device)
    held = hold(device, args.fill)
    held_gib = 0.0 if held is None else held.numel() / 2**30
    announce("memory-full", device, [("held_gib", f"{held_gib:.2f}"), ("fill", args.fill)])
    clock = StepClock(args, device)
    while True:
        clock.begin()
        optimizer.zero_grad(set_to_none=True)
        model(inputs).square().mean().backward()
        optimizer.step()
        if not clock.end():
            break


if __name__ == "__main__":
    entry(main)
