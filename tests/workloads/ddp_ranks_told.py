"""Gloo DDP for torchrun that tells who it is, then steps until stopped (or `STEPS` steps).

Each rank prints `rank R pid P` (its RANK from the environment and its own pid) before its
loop: the outside truth an attach test checks the ranks it found against. The bottleneck is
planted: each batch comes from a DataLoader (no workers) whose dataset sleeps `LATENCY_MS`
(default 150) per sample, beside a small model, so every rank waits on its input pipeline.
With `DDP=0` the ranks train apart (no process group): one can die while the others go on.
"""

import atexit
import os
import sys
import time

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, Dataset

LATENCY_S = float(os.environ.get("LATENCY_MS", "150")) / 1000


class Slow(Dataset[tuple[torch.Tensor, torch.Tensor]]):
    def __len__(self) -> int:
        return 1_000_000

    def __getitem__(self, index: int) -> tuple[torch.Tensor, torch.Tensor]:
        time.sleep(LATENCY_S)
        return torch.randn(32), torch.tensor(index % 4)


torch.set_num_threads(1)
together = os.environ.get("DDP", "1") == "1"
model: nn.Module = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 4))
if together:
    dist.init_process_group("gloo")
    model = DistributedDataParallel(model)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
# One write: print() writes the text and its newline apart, and two ranks unbuffered (torchrun
# runs them with -u) can interleave between the two on the shared pipe.
sys.stdout.write(f"rank {os.environ['RANK']} pid {os.getpid()}\n")
sys.stdout.flush()
steps = int(os.environ.get("STEPS", "1000000"))
for step, (inputs, labels) in enumerate(DataLoader(Slow(), batch_size=2)):
    if step == steps:
        break
    optimizer.zero_grad()
    nn.functional.cross_entropy(model(inputs), labels).backward()
    optimizer.step()
if together:
    dist.barrier()
    dist.destroy_process_group()
print("ddp job done", flush=True)
# See tests/workloads/ddp.py: torch 2.13's gloo may abort a rank in the interpreter's teardown.
atexit._run_exitfuncs()
os._exit(0)
