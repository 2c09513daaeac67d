"""Gloo DDP for torchrun that steps steadily for a while (`STEPS`, default 300, 20 ms of sleep
each), long enough for a test to kill one node's launcher while the job runs."""

import atexit
import os
import time

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel

torch.set_num_threads(1)
dist.init_process_group("gloo")
model = DistributedDataParallel(nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 4)))
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
inputs, labels = torch.randn(8, 32), torch.randint(0, 4, (8,))
for _ in range(int(os.environ.get("STEPS", "300"))):
    time.sleep(0.02)
    optimizer.zero_grad()
    nn.functional.cross_entropy(model(inputs), labels).backward()
    optimizer.step()
dist.barrier()
dist.destroy_process_group()
print("worker done", flush=True)
# As tests/workloads/ddp.py: gloo's interpreter teardown aborts a rank now and then.
atexit._run_exitfuncs()
os._exit(0)
