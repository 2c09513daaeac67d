"""A two-rank DDP job (gloo, CPU) for torchrun that trains until it is stopped.

With `IGNORE_STOP_SIGNALS=1` each worker ignores SIGINT and SIGTERM, as a job stuck in a
collective or with its own careless handlers would: only SIGKILL ends it.
"""

from __future__ import annotations

import os
import signal

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel


def main() -> None:
    if os.environ.get("IGNORE_STOP_SIGNALS") == "1":
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    dist.init_process_group("gloo")
    torch.set_num_threads(1)
    model = DistributedDataParallel(nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 4)))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    inputs, labels = torch.randn(16, 32), torch.randint(0, 4, (16,))
    print(f"rank {dist.get_rank()} training", flush=True)
    while True:
        optimizer.zero_grad()
        nn.functional.cross_entropy(model(inputs), labels).backward()
        optimizer.step()


if __name__ == "__main__":
    main()
