"""Two-rank gloo DDP with a large model and a tiny batch: all-reduce dominates (communication)."""

import atexit
import os

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel

torch.set_num_threads(1)
dist.init_process_group("gloo")
torch.manual_seed(0)
model = DistributedDataParallel(nn.Sequential(*(nn.Linear(1024, 1024) for _ in range(12))))
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
for _ in range(int(os.environ.get("STEPS", "20"))):
    loss = model(torch.randn(2, 1024)).sum()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
dist.barrier()
dist.destroy_process_group()
print("ddp job done", flush=True)
# See tests/workloads/ddp.py: torch 2.13's gloo may abort a rank in the interpreter's teardown.
atexit._run_exitfuncs()
os._exit(0)
