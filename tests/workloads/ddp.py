"""A two-rank DDP job (gloo, CPU) for torchrun: each worker must get its own agent."""

from __future__ import annotations

import atexit
import os
import sys

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

STEPS = 10


def main() -> int:
    dist.init_process_group("gloo")
    torch.set_num_threads(1)
    data = TensorDataset(torch.randn(8 * STEPS * 2, 32), torch.randint(0, 4, (8 * STEPS * 2,)))
    loader = DataLoader(data, batch_size=8, sampler=DistributedSampler(data))
    model = DistributedDataParallel(nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 4)))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    for inputs, labels in loader:
        optimizer.zero_grad()
        nn.functional.cross_entropy(model(inputs), labels).backward()
        optimizer.step()
    dist.barrier()
    dist.destroy_process_group()
    print("worker done", flush=True)
    # torch 2.13's gloo aborts a rank in its interpreter teardown now and then ("terminate called
    # without an active exception", SIGABRT): 2 of 8 bare torchrun runs of this job without
    # torchtop, 2 of 12 under load with a barrier before destroy_process_group, 0 of 12 with this
    # exit. The atexit handlers (the agent's `bye` among them) still run; the C++ teardown not.
    atexit._run_exitfuncs()
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main())
