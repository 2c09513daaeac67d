"""Two-rank gloo DDP that counts its own all-reduces: a comm hook tallies each step's calls and
bytes, and the loop times each backward pass, into `$DDP_TRUTH_DIR/rank<N>.json`."""

import atexit
import json
import os
import time
from pathlib import Path

import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
from torch.nn.parallel import DistributedDataParallel

torch.set_num_threads(1)
dist.init_process_group("gloo")
torch.manual_seed(0)
calls = [0]
moved = [0]


# DDP checks the hook's annotations against the real classes, which torch's stubs lack.
def counted(
    state: object,
    bucket: dist.GradBucket,  # type: ignore[name-defined]
) -> torch.futures.Future[torch.Tensor]:
    calls[0] += 1
    moved[0] += bucket.buffer().numel() * bucket.buffer().element_size()
    return default_hooks.allreduce_hook(None, bucket)  # type: ignore[arg-type]


model = DistributedDataParallel(nn.Sequential(*(nn.Linear(1024, 1024) for _ in range(12))))
model.register_comm_hook(None, counted)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
steps = []
for _ in range(20):
    calls[0] = moved[0] = 0
    loss = model(torch.randn(2, 1024)).sum()
    optimizer.zero_grad()
    began = time.perf_counter()
    loss.backward()
    backward_ms = (time.perf_counter() - began) * 1000.0
    optimizer.step()
    steps.append({"calls": calls[0], "bytes": moved[0], "backward_ms": backward_ms})
out = Path(os.environ["DDP_TRUTH_DIR"]) / f"rank{dist.get_rank()}.json"
out.write_text(
    json.dumps({"steps": steps, "parameter_bytes": 4 * sum(p.numel() for p in model.parameters())})
)
dist.barrier()
dist.destroy_process_group()
print("ddp job done", flush=True)
# See tests/workloads/ddp.py: torch 2.13's gloo may abort a rank in the interpreter's teardown.
atexit._run_exitfuncs()
os._exit(0)
