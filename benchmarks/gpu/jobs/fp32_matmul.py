"""Planted truth `gpu` with `tensor-cores-unused`: large float32 matmuls, no autocast, no TF32.

A stack of square Linear layers trained in float32 at PyTorch's default matmul precision
("highest": no TF32), so every GEMM runs on the CUDA cores of a card whose Tensor Cores would
run it several times faster. Run names `gpu`
with `tensor-cores-unused` and, on compute capability 8 or more, the bfloat16 autocast and TF32
fixes; `tune --allow precision` trials the TF32 override. `--compile` wraps the model in
`torch.compile` (the kit checks that steps are still found and that compile time stays out of
the step figures).
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parent))
from kit_loop import StepClock, announce, device_of, entry, parser, sized


def main(argv: list[str] | None = None) -> None:
    options = parser(__doc__.splitlines()[0])
    options.add_argument("--width", type=int, default=8192)
    options.add_argument("--layers", type=int, default=4)
    options.add_argument("--batch-size", type=int, default=4096)
    options.add_argument("--compile", action="store_true", help="torch.compile the model")
    args = options.parse_args(argv)
    device = device_of(args)
    torch.manual_seed(0)
    # TF32 is left at PyTorch's default (off for matmuls): setting it here would undo the TF32
    # override that `tune --allow precision` relaunches the job with.
    width, batch = sized(args.width, args.scale, 8), sized(args.batch_size, args.scale, 8)
    layers: list[nn.Module] = []
    for _ in range(args.layers):
        layers += [nn.Linear(width, width), nn.ReLU()]
    model: nn.Module = nn.Sequential(*layers).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-4)
    step_model = torch.compile(model) if args.compile else model
    inputs = torch.randn(batch, width, device=device)
    precision = torch.get_float32_matmul_precision()
    sizes = [
        ("width", width),
        ("batch", batch),
        ("compile", args.compile),
        ("precision", precision),
    ]
    announce("fp32-matmul", device, sizes)
    clock = StepClock(args, device)
    while True:
        clock.begin()
        optimizer.zero_grad(set_to_none=True)
        step_model(inputs).square().mean().backward()
        optimizer.step()
        if not clock.end():
            break


if __name__ == "__main__":
    entry(main)
