"""A CPU job recorded with `profile_memory=True` that raises `torch.OutOfMemoryError` after
its profiled steps, as a CUDA job that outgrows its device does (the CPU cannot run out here
safely, so the error is raised with the words PyTorch's CUDA allocator uses).
Each step holds a 48 MiB tensor at its peak. Usage: python dies_of_oom.py OUT_DIR
"""

from __future__ import annotations

import sys

import torch

HELD_BYTES = 48 << 20


def main(out_dir: str) -> None:
    model = torch.nn.Linear(32, 32)
    schedule = torch.profiler.schedule(wait=0, warmup=1, active=2)
    with torch.profiler.profile(
        activities=[torch.profiler.ProfilerActivity.CPU],
        schedule=schedule,
        profile_memory=True,
        on_trace_ready=torch.profiler.tensorboard_trace_handler(out_dir),
    ) as prof:
        for _ in range(3):
            held = torch.empty(HELD_BYTES // 4)
            model(torch.randn(8, 32)).sum().backward()
            del held
            prof.step()
    raise torch.OutOfMemoryError(
        "CUDA out of memory. Tried to allocate 96.00 MiB (GPU 0; 79.11 GiB total capacity)"
    )


if __name__ == "__main__":
    main(sys.argv[1])
