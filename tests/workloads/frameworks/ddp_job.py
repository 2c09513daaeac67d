"""A plain `torchrun` DDP job (gloo): each rank reads a slow Dataset through a DistributedSampler.

Input-bound: each sample sleeps in `__getitem__` with the loader's default `num_workers=0`. Each
rank prints its loader's num_workers per epoch and its own optimizer-step count.
"""

from __future__ import annotations

import atexit
import itertools
import os
import statistics
import sys
import time

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, Dataset, DistributedSampler


class Slow(Dataset[tuple[torch.Tensor, torch.Tensor]]):
    def __init__(self, size: int) -> None:
        self.x, self.y = torch.randn(size, 32), torch.randint(0, 4, (size,))

    def __len__(self) -> int:
        return len(self.y)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, torch.Tensor]:
        time.sleep(0.005)
        return self.x[index], self.y[index]


torch.set_num_threads(1)
dist.init_process_group("gloo")
rank = dist.get_rank()
steps = int(sys.argv[1]) if len(sys.argv) > 1 else 30
torch.manual_seed(0)
data = Slow(256)
sampler: DistributedSampler[tuple[torch.Tensor, torch.Tensor]] = DistributedSampler(data)
loader = DataLoader(data, batch_size=8, sampler=sampler)
model = DistributedDataParallel(nn.Sequential(nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, 4)))
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
done, epoch = 0, 0
stepped_at: list[float] = []
while done < steps:
    sampler.set_epoch(epoch)
    print(f"rank {rank} epoch {epoch} loader num_workers {loader.num_workers}", flush=True)
    for x, y in loader:
        loss = nn.functional.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        stepped_at.append(time.perf_counter())
        done += 1
        if done == steps:
            break
    epoch += 1
print(f"rank {rank} optimizer steps {done}", flush=True)
# From the second step's end on: the steps torchtop keeps after its two warm-up steps. The
# median: one step also holds torchtop's own profiler export, which it leaves out of its steps.
walls_ms = [(b - a) * 1000 for a, b in itertools.pairwise(stepped_at[1:])]
print(f"rank {rank} median step ms {statistics.median(walls_ms):.2f}", flush=True)
dist.barrier()
dist.destroy_process_group()
# As tests/workloads/ddp_comm.py: torch 2.13's gloo may abort a rank in the interpreter's teardown.
atexit._run_exitfuncs()
os._exit(0)
