"""A job whose resident set grows by a known amount: `GROW_STEPS` steps each keep 32 MiB more
(written, so resident), then `HOLD_STEPS` steps keep it; with `oom` it then asks the CPU
allocator for a petabyte, which fails for real (`DefaultCPUAllocator: can't allocate memory`).
"""

from __future__ import annotations

import sys
import time

import torch

GROW_STEPS = 8
HOLD_STEPS = 10
STEP_BYTES = 32 * 2**20


def main() -> None:
    model = torch.nn.Linear(64, 64)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    kept = []
    for step in range(GROW_STEPS + HOLD_STEPS):
        if step < GROW_STEPS:
            kept.append(torch.ones(STEP_BYTES // 4))
        model(torch.randn(16, 64)).sum().backward()
        optimizer.step()
        optimizer.zero_grad()
        time.sleep(0.3)
    if "oom" in sys.argv[1:]:
        torch.empty(2**50, dtype=torch.uint8)


if __name__ == "__main__":
    main()
