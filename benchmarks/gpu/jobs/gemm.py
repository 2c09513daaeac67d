"""Efficiency truth: one GEMM of known size, timed by `torch.utils.benchmark` before the loop.

Each step runs `--calls` `torch.mm` of an (n x n) by (n x n) pair in `--dtype` (bf16 by default,
on the Tensor Cores), then `optimizer.step()` on a parameter without a gradient: SGD skips it, no
operator runs, but the call marks the step for torchtop's agent. So a step holds exactly
`calls x 2 n^3` FLOPs. Before the loop the job times the same call with `torch.utils.benchmark`
(its own synchronisation and warm-up) and prints

    KIT-GEMM n=8192 dtype=bf16 flops=1099511627776 tflops_s=712.3

the outside truth the kit holds the report's `efficiency` entry for `aten::mm` against: its
FLOPs per call exactly, its achieved TFLOP/s (kernel time through correlation) within 10%.
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch
from torch.utils import benchmark

sys.path.insert(0, str(Path(__file__).resolve().parent))
from kit_loop import StepClock, announce, device_of, entry, parser, sized

DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}
TIMER_S = 1.0


def benchmark_tflops(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor) -> float:
    """torch.utils.benchmark's median of `torch.mm(a, b, out=out)`, as TFLOP/s."""
    timer = benchmark.Timer("torch.mm(a, b, out=out)", globals={"torch": torch, "a": a, "b": b,
                                                                 "out": out})  # fmt: skip
    median_s = timer.blocked_autorange(min_run_time=TIMER_S).median
    n, k = a.shape
    return 2.0 * n * k * b.shape[1] / median_s / 1e12


def main(argv: list[str] | None = None) -> None:
    options = parser(__doc__.splitlines()[0])
    options.add_argument("--n", type=int, default=8192)
    options.add_argument("--calls", type=int, default=8)
    options.add_argument("--dtype", choices=sorted(DTYPES), default="bf16")
    args = options.parse_args(argv)
    device = device_of(args)
    torch.manual_seed(0)
    n = sized(args.n, args.scale, 8)
    dtype = DTYPES[args.dtype if device.type == "cuda" else "fp32"]
    a = torch.randn(n, n, device=device, dtype=dtype)
    b = torch.randn(n, n, device=device, dtype=dtype)
    out = torch.empty(n, n, device=device, dtype=dtype)
    name = {v: k for k, v in DTYPES.items()}[dtype]
    announce("gemm", device, [("n", n), ("calls", args.calls), ("dtype", name)])
    torch.mm(a, b, out=out)  # cuBLAS picks its kernel on the first call
    tflops_s = benchmark_tflops(a, b, out)
    print(f"KIT-GEMM n={n} dtype={name} flops={2 * n**3} tflops_s={tflops_s:.4f}", flush=True)
    optimizer = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1, device=device))], lr=0.1)
    clock = StepClock(args, device)
    while True:
        clock.begin()
        for _ in range(args.calls):
            torch.mm(a, b)
        optimizer.step()
        if not clock.end():
            break


if __name__ == "__main__":
    entry(main)
