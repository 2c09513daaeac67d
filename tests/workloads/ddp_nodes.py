"""Four-rank gloo DDP over two "nodes" (two torchruns): a planted straggler and a killed rank.

Run on each node as `torchrun --nnodes 2 --node-rank 0|1 --nproc-per-node 2 --rdzv-backend
c10d --rdzv-endpoint 127.0.0.1:PORT ddp_nodes.py`. Rank `SLOW_RANK` (default 1, node 0) sleeps
`SLEEP_S` (default 0.05) before each forward, on top of `WORK_S` (default 0) that every rank
sleeps there (its work off the CPU, as a rank waiting on its device): `WORK_S=0.02 SLEEP_S=0.004`
plants a rank 20% slower in its own work; rank `KILL_RANK` (default 2, node 1) SIGKILLs itself after
`KILL_AFTER_STEPS` steps, enough for the straggler to be judged (torchtop's window is 50).
With `KILL_RANK=-1` no rank is killed and every rank stops after `STEPS` steps: the job then
also serves on one node (`torchrun --standalone --nproc-per-node 3`), as a plain straggler.

What a user would check, printed by each rank as it happens (one line each, flushed):
- `rank R step N busy_ms X`: after each optimizer step, the rank's own busy time in it (the
  step less its `backward()`, where DDP waits for the other ranks' gradients);
- `rank R killed at step N t T`: the killed rank, just before its SIGKILL (T: `time.time()`);
- `rank R failed: ERROR`: a rank whose collective failed once a peer was gone (its steps are
  the step lines it printed before).

The other ranks do not outlive the killed one for long: their next all-reduce fails (exit 1,
printed), or torchrun stops them first (SIGTERM) once it sees its worker died.
"""

import atexit
import contextlib
import os
import signal
import sys
import time

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel

SLEEP_S = float(os.environ.get("SLEEP_S", "0.05"))
WORK_S = float(os.environ.get("WORK_S", "0"))
KILL_AFTER_STEPS = int(os.environ.get("KILL_AFTER_STEPS", "70"))
STEPS = int(os.environ.get("STEPS", "1000"))
"""Where no rank is killed, the steps each rank takes; else a bound, should the kill not come."""


def say(line: str) -> None:
    """One line in one write: the ranks of a node share torchrun's stdout, and `print` writes
    the text and its newline separately, so two ranks' lines could run together."""
    os.write(sys.stdout.fileno(), (line + "\n").encode())


def train(rank: int, slow: bool, kill: bool) -> int:
    """The number of steps this rank completed (the killed rank never returns)."""
    torch.manual_seed(rank)
    model = DistributedDataParallel(nn.Sequential(*(nn.Linear(256, 256) for _ in range(3))))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    inputs = torch.randn(64, 256)
    for step in range(1, STEPS + 1):
        started = time.perf_counter()
        if slow or WORK_S:
            time.sleep(WORK_S + (SLEEP_S if slow else 0.0))
        loss = model(inputs).sum()
        optimizer.zero_grad()
        backward_at = time.perf_counter()
        loss.backward()
        backward_s = time.perf_counter() - backward_at
        optimizer.step()
        busy_ms = 1000 * (time.perf_counter() - started - backward_s)
        say(f"rank {rank} step {step} busy_ms {busy_ms:.3f}")
        if kill and step == KILL_AFTER_STEPS:
            say(f"rank {rank} killed at step {step} t {time.time():.3f}")
            os.kill(os.getpid(), signal.SIGKILL)
    return STEPS


def main() -> int:
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    slow = rank == int(os.environ.get("SLOW_RANK", "1"))
    kill = rank == int(os.environ.get("KILL_RANK", "2"))
    done = 0
    try:
        done = train(rank, slow, kill)
    except Exception as error:  # a peer is gone: the all-reduce fails
        message = str(error).splitlines()[0] if str(error) else ""
        say(f"rank {rank} failed: {type(error).__name__}: {message}")
        # sys.exit(1) so that how it ended is recorded (torchtop's agent watches sys.exit),
        # then the exit without the C++ teardown, which gloo may abort (tests/workloads/ddp.py).
        with contextlib.suppress(SystemExit):
            sys.exit(1)
        atexit._run_exitfuncs()
        os._exit(1)
    say(f"rank {rank} done after {done} steps")
    atexit._run_exitfuncs()
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main())
