"""Three-rank gloo DDP where one rank (`SLOW_RANK`, default 1) sleeps 50 ms before each forward.

Each rank prints the median of its own busy time per step (the step less its `backward()`,
where DDP waits for the other ranks' gradients), so a test can hold torchtop's `slower_by`
against what the job itself measured.
"""

import atexit
import os
import statistics
import time

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel

STEPS = 50
SLEEP_S = 0.05

torch.set_num_threads(1)
dist.init_process_group("gloo")
rank = dist.get_rank()
slow = rank == int(os.environ.get("SLOW_RANK", "1"))
torch.manual_seed(rank)
model = DistributedDataParallel(nn.Sequential(*(nn.Linear(512, 512) for _ in range(4))))
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
inputs = torch.randn(128, 512)
busy_s = []
for _ in range(STEPS):
    started = time.perf_counter()
    if slow:
        time.sleep(SLEEP_S)
    loss = model(inputs).sum()
    optimizer.zero_grad()
    backward_at = time.perf_counter()
    loss.backward()
    backward_s = time.perf_counter() - backward_at
    optimizer.step()
    busy_s.append(time.perf_counter() - started - backward_s)
dist.barrier()
dist.destroy_process_group()
print(f"rank {rank} busy_ms {1000 * statistics.median(busy_s[5:]):.3f}", flush=True)
# See tests/agent/jobs/ddp.py: torch 2.13's gloo may abort a rank in the interpreter's teardown.
atexit._run_exitfuncs()
os._exit(0)
