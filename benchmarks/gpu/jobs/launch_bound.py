"""Planted truth `cpu` with `launch-bound`: thousands of tiny kernels per step.

A chain of `--ops` elementwise operations on a 256-element tensor, forward and backward: each
kernel runs for a microsecond or two and the GPU waits for every launch. Run names `cpu` with
`launch-bound`; attach (stacks only) must name `cpu` too.
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parent))
from kit_loop import StepClock, announce, device_of, entry, parser, sized


class Chain(nn.Module):
    def __init__(self, ops: int) -> None:
        super().__init__()
        self.ops = ops
        self.scale = nn.Parameter(torch.ones(256))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for _ in range(self.ops):
            x = x * self.scale + 0.001
        return x


def main(argv: list[str] | None = None) -> None:
    options = parser(__doc__.splitlines()[0])
    options.add_argument("--ops", type=int, default=500)
    args = options.parse_args(argv)
    device = device_of(args)
    torch.manual_seed(0)
    ops = sized(args.ops, args.scale, 10)
    model = Chain(ops).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-6)
    inputs = torch.randn(256, device=device)
    announce("launch-bound", device, [("ops", ops), ("elements", 256)])
    clock = StepClock(args, device)
    while True:
        clock.begin()
        optimizer.zero_grad(set_to_none=True)
        model(inputs).mean().backward()
        optimizer.step()
        if not clock.end():
            break


if __name__ == "__main__":
    entry(main)
