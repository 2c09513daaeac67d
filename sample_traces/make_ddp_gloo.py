"""Make `ddp_gloo/`: a 2-process DistributedDataParallel job whose steps go to all-reduce.

What it shows: a communication-bound data-parallel job. Two CPU processes train one MLP
under `DistributedDataParallel` with the gloo backend. The model has ~42M parameters (ten
2048 x 2048 `Linear` layers) while each rank sees a tiny batch of 4 samples, so the math
per step is a few thin matrix products while the gradient all-reduce moves ~168 MB of
float32 gradients per step through gloo over loopback TCP. Each rank runs with one
intra-op thread, so the two ranks fit on a 2-core machine, and writes its own trace:
`rank0.*` and `rank1.*`.

In the traces each bucket's all-reduce shows up twice: a short `c10d::allreduce_` op
(`cpu_op`) on the training thread that launches it, and a long `gloo:all_reduce`
(`user_annotation`) on one of gloo's `pt_gloo_runloop` threads that does the work. Those
run for well over half of every `ProfilerStep#N`, competing for the cores with backward;
`torchtop analyze` must call it a `communication` bottleneck (the fix: a larger batch
per rank, gradient accumulation with `no_sync()`, or fewer, larger buckets).

Run: `python sample_traces/make_ddp_gloo.py [--out DIR] [--steps N]`.
"""

from __future__ import annotations

import os
import socket
import time
from pathlib import Path

import _common
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch import nn
from torch.nn.parallel import DistributedDataParallel

JOB = "ddp_gloo"
WORLD_SIZE = 2
BATCH = 4
WIDTH = 2048
LAYERS = 10
CLASSES = 10


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def build_model() -> nn.Module:
    layers: list[nn.Module] = []
    for _ in range(LAYERS):
        layers += [nn.Linear(WIDTH, WIDTH), nn.ReLU()]
    layers.append(nn.Linear(WIDTH, CLASSES))
    return nn.Sequential(*layers)


def train(rank: int, out: Path, active: int) -> None:
    """One rank: join the gloo group, train under DDP, write `rank<N>.*.pt.trace.json.gz`."""
    torch.set_num_threads(1)
    _common.seed_everything()  # same initial weights on both ranks (DDP also broadcasts)
    dist.init_process_group("gloo", rank=rank, world_size=WORLD_SIZE)
    try:
        # Gradients live in DDP's buckets (no extra bucket->grad copy each step), and the
        # default 25 MB buckets let the all-reduce of late layers overlap early layers' backward.
        model = DistributedDataParallel(build_model(), gradient_as_bucket_view=True)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
        loss_fn = nn.CrossEntropyLoss()
        generator = torch.Generator().manual_seed(_common.SEED + rank)  # each rank its shard
        steps = _common.total_steps(active)
        inputs = torch.randn(steps, BATCH, WIDTH, generator=generator)
        labels = torch.randint(0, CLASSES, (steps, BATCH), generator=generator)

        worker = f"rank{rank}"
        with _common.make_profiler(out, worker, active) as prof:
            for step in range(steps):
                optimizer.zero_grad(set_to_none=True)
                loss = loss_fn(model(inputs[step]), labels[step])
                loss.backward()  # DDP all-reduces the gradient buckets here
                optimizer.step()
                prof.step()
        dist.barrier()
    finally:
        dist.destroy_process_group()


def main() -> None:
    args = _common.parse_args(JOB, __doc__.splitlines()[0], default_steps=6)
    started = time.perf_counter()
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(free_port())
    mp.spawn(  # type: ignore[attr-defined,no-untyped-call]  # torch leaves spawn untyped
        train, args=(args.out, args.steps), nprocs=WORLD_SIZE, join=True
    )
    for rank in range(WORLD_SIZE):
        _common.report(JOB, args.out, f"rank{rank}", started)


if __name__ == "__main__":
    main()
