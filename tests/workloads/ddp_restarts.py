"""Gloo DDP for `torchrun --max-restarts 1` whose rank 1 kills itself once.

Each rank prints `rank R pid P attempt A started T` first thing (its RANK, its pid,
TORCHELASTIC_RESTART_COUNT and the Unix time it began, before torch is imported): the outside
truth a test checks what attach shows against. On the first attempt only, rank 1 SIGKILLs
itself at its first step after `KILL_FILE` exists (the test makes it once attach watches);
torchrun then stops rank 0 and starts both again under new pids. Each step first sleeps
`LATENCY_MS` (default 150), a slow input pipeline's wait. With `DDP=0` the ranks train apart
(no process group, so no rendezvous of gloo's to miss on a loaded machine); torchrun restarts
them all the same.
"""

import os
import signal
import sys
import time

sys.stdout.write(
    f"rank {os.environ['RANK']} pid {os.getpid()} "
    f"attempt {os.environ.get('TORCHELASTIC_RESTART_COUNT', '0')} started {time.time():.3f}\n"
)
sys.stdout.flush()

import torch  # noqa: E402  (after the line above: its time is the process's start)
import torch.distributed as dist  # noqa: E402
from torch import nn  # noqa: E402
from torch.nn.parallel import DistributedDataParallel  # noqa: E402

LATENCY_S = float(os.environ.get("LATENCY_MS", "150")) / 1000
DOOMED = os.environ["RANK"] == "1" and os.environ.get("TORCHELASTIC_RESTART_COUNT", "0") == "0"


torch.set_num_threads(1)
model: nn.Module = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 4))
if os.environ.get("DDP", "1") == "1":
    dist.init_process_group("gloo")
    model = DistributedDataParallel(model)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
inputs, labels = torch.randn(2, 32), torch.tensor([0, 1])
while True:
    time.sleep(LATENCY_S)  # the batch's wait, as a slow input pipeline's
    if DOOMED and os.path.exists(os.environ["KILL_FILE"]):
        os.kill(os.getpid(), signal.SIGKILL)
    optimizer.zero_grad()
    nn.functional.cross_entropy(model(inputs), labels).backward()
    optimizer.step()
