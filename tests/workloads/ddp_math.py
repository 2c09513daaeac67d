"""Gloo DDP for torchrun whose steps are CPU math, with the threads torchrun set.

Each rank prints `rank R pid P threads T` (its RANK, its pid and `torch.get_num_threads()`)
before its loop, then steps `STEPS` times (default: until stopped). The model is narrow (0.8 MB
of parameters: its gradients fit one DDP bucket) and the batch is large, so the steps are
matrix products on the CPU: the job `cpu-math-bound` describes. The job never sets its own
thread count: it runs with what torchrun set (`OMP_NUM_THREADS=1` for 2 ranks).
"""

import atexit
import os
import sys

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel

dist.init_process_group("gloo")
torch.manual_seed(0)
WIDTH = 256
model = DistributedDataParallel(nn.Sequential(*(nn.Linear(WIDTH, WIDTH) for _ in range(3))))
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
inputs = torch.randn(2048, WIDTH)
# One write: two unbuffered ranks on one pipe can interleave print's text and newline.
sys.stdout.write(f"rank {os.environ['RANK']} pid {os.getpid()} threads {torch.get_num_threads()}\n")
sys.stdout.flush()
for _ in range(int(os.environ.get("STEPS", "1000000"))):
    loss = model(inputs).square().mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
dist.barrier()
dist.destroy_process_group()
print("ddp math done", flush=True)
# See tests/workloads/ddp.py: torch 2.13's gloo may abort a rank in the interpreter's teardown.
atexit._run_exitfuncs()
os._exit(0)
