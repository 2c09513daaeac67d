"""A CPU job recorded with `profile_memory=True` whose allocations the test knows.

Each of 3 profiled steps: a forward (`nn.Linear` on a fixed batch), then, inside a
record_function `known_allocs`, a 64 MiB tensor (`aten::empty`) and a 32 MiB one
(`aten::zeros`) held together, then freed; then backward and an SGD step. The 96 MiB held at
once is far above everything else the tiny model allocates, so the peak, and the operators
alive at it, are known exactly. Usage: python known_allocations.py OUT_DIR
"""

from __future__ import annotations

import sys

import torch

BIG_BYTES = 64 << 20
SMALL_BYTES = 32 << 20


def main(out_dir: str) -> None:
    torch.manual_seed(0)
    model = torch.nn.Linear(64, 64)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    batch = torch.randn(32, 64)
    schedule = torch.profiler.schedule(wait=0, warmup=1, active=3)
    with torch.profiler.profile(
        activities=[torch.profiler.ProfilerActivity.CPU],
        schedule=schedule,
        profile_memory=True,
        on_trace_ready=torch.profiler.tensorboard_trace_handler(out_dir),
    ) as prof:
        for _ in range(4):
            loss = model(batch).square().mean()
            with torch.profiler.record_function("known_allocs"):
                big = torch.empty(BIG_BYTES // 4, dtype=torch.float32)
                small = torch.zeros(SMALL_BYTES // 4, dtype=torch.float32)
                del big, small
            loss.backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            prof.step()


if __name__ == "__main__":
    main(sys.argv[1])
