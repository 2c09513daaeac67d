"""Two gloo DDP ranks for torchrun; rank 1 aborts after Python has exited.

Rank 1 registers libc's `abort` as a C-level exit handler (`__cxa_atexit`, what a C++ library's
static destructors use), so it runs after the interpreter's own teardown: the agent's `bye`
(written at Python exit, status 0) is already in its journal when the process dies of SIGABRT,
as a rank does whose gloo or NCCL teardown aborts. Rank 0 exits 0 without the C++ teardown (see
tests/workloads/ddp.py for why), after rank 1 has aborted: the launcher then sees one rank
exit 0 and one SIGABRT, whatever the order of its polls.
"""

from __future__ import annotations

import atexit
import ctypes
import os
import sys
import time

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel

STEPS = 8
ABORT_RANK = 1


def abort_after_python_exit() -> None:
    libc = ctypes.CDLL(None)
    libc.__cxa_atexit.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
    libc.__cxa_atexit(ctypes.cast(libc.abort, ctypes.c_void_p), None, None)


def main() -> int:
    dist.init_process_group("gloo")
    torch.set_num_threads(1)
    rank = dist.get_rank()
    model = DistributedDataParallel(nn.Linear(16, 4))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    for _ in range(STEPS):
        optimizer.zero_grad()
        model(torch.randn(8, 16)).sum().backward()
        optimizer.step()
        time.sleep(0.05)
    dist.barrier()
    dist.destroy_process_group()
    print(f"rank {rank} done", flush=True)
    if rank == ABORT_RANK:
        abort_after_python_exit()
        return 0
    time.sleep(1.0)  # rank 1 is gone by now
    atexit._run_exitfuncs()
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main())
