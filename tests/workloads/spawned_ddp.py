"""Two-rank gloo DDP started by `torch.multiprocessing.spawn`, as pytorch/examples' ImageNet
trainer starts it: the rank is `spawn`'s argument, passed to `init_process_group(rank=...)`;
no `RANK` in any environment. Each rank takes `STEPS` (default 30) steps and prints
`rank R pid P done`."""

import atexit
import os
import time

import torch
import torch.distributed as dist
from torch import nn
from torch.multiprocessing.spawn import spawn
from torch.nn.parallel import DistributedDataParallel

STEPS = int(os.environ.get("STEPS", "30"))


def rank_main(rank: int, port: str) -> None:
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=2)
    model = DistributedDataParallel(nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 4)))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    inputs = torch.randn(8, 32)
    for _ in range(STEPS):
        time.sleep(0.01)
        optimizer.zero_grad()
        model(inputs).sum().backward()
        optimizer.step()
    dist.barrier()
    print(f"rank {rank} pid {os.getpid()} done", flush=True)
    # As tests/workloads/ddp.py: gloo's interpreter teardown aborts a rank now and then.
    atexit._run_exitfuncs()
    os._exit(0)


if __name__ == "__main__":
    # torch 2.13 leaves spawn untyped.
    spawn(rank_main, args=(os.environ.get("PORT", "29613"),), nprocs=2)  # type: ignore[no-untyped-call]
