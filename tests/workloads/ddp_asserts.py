"""Two-rank gloo DDP for torchrun whose rank `FAIL_RANK` (default 1) fails an assertion at step
`FAIL_STEP` (default 20), uncaught: its traceback ends `AssertionError: planted failure on rank
1 at step 20`. Its peer waits in its next all-reduce until gloo or torchrun ends it."""

import os
import time

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel

FAIL_RANK = int(os.environ.get("FAIL_RANK", "1"))
FAIL_STEP = int(os.environ.get("FAIL_STEP", "20"))

torch.set_num_threads(1)
dist.init_process_group("gloo")
rank = dist.get_rank()
model = DistributedDataParallel(nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 4)))
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
inputs = torch.randn(8, 32)
for step in range(1, 10_000):
    time.sleep(0.01)
    optimizer.zero_grad()
    model(inputs).sum().backward()
    optimizer.step()
    assert not (rank == FAIL_RANK and step == FAIL_STEP), (
        f"planted failure on rank {rank} at step {step}"
    )
