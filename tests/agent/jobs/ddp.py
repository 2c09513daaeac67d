"""A two-rank DDP job (gloo, CPU) for torchrun: each worker must get its own agent."""

from __future__ import annotations

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
    # Both ranks leave together: torch 2.13's gloo aborts a rank ("terminate called without an
    # active exception") in about one exit in four when one destroys its group while the other
    # is still in its last all-reduce (2 of 8 bare torchrun runs here; 0 of 10 with the barrier).
    dist.barrier()
    dist.destroy_process_group()
    print("worker done")
    return 0


if __name__ == "__main__":
    sys.exit(main())
