"""A training-like loop whose only arithmetic is matmuls of fixed sizes: its FLOPs are known.

Each step runs `MATMULS` calls of `torch.mm` on an (M x K) by (K x N) pair, 2*M*K*N FLOPs each,
then `optimizer.step()` on a parameter that has no gradient: SGD skips it (no operator runs),
but the call marks the step for torchtop's agent. So a step holds exactly `FLOPS_PER_STEP`
FLOPs, which the live report's `efficiency` must count. One torch thread, so the achieved rate
can be held against `torch.utils.benchmark` timing the same call on the same thread count.
Runs for `--seconds`, or until stopped.
"""

from __future__ import annotations

import argparse
import time

import torch

M, K, N = 192, 256, 320
MATMULS = 6
FLOPS_PER_MATMUL = 2 * M * K * N
FLOPS_PER_STEP = MATMULS * FLOPS_PER_MATMUL


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=60.0)
    args = parser.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(1)
    a, b = torch.randn(M, K), torch.randn(K, N)
    unused = torch.nn.Parameter(torch.zeros(1))
    optimizer = torch.optim.SGD([unused], lr=0.01)
    end = time.perf_counter() + args.seconds
    with torch.no_grad():
        while time.perf_counter() < end:
            for _ in range(MATMULS):
                torch.mm(a, b)
            optimizer.step()
    print("matmul job done")


if __name__ == "__main__":
    main()
