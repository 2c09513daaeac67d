"""Make `twins/`: jobs of each class a CPU can show, each beside its fixed twin.

What it shows: the outside truth for the verdict's model. For each pair the same job is
recorded twice, `before` (the bottleneck planted) and `after` (the one fix its class offers
applied, nothing else changed), so the step time the fix saved can be set beside the gain the
verdict predicted from the `before` trace (docs/verdicts.md):

- `dataloader`: the `dataloader_starved` job (3 ms of "storage" per sample, `num_workers=0`);
  after: 8 worker processes with persistent workers (the sleeps overlap the model's math).
- `copies`: the `copy_heavy` job's wasteful chain of conversions; after: one conversion to
  float32 channels-last, the only copy the model needs.
- `ddp`: the `ddp_gloo` job (2 ranks, gloo, 42M parameters, batch 4 per rank); after:
  gradients accumulated locally under `no_sync()` and all-reduced every 4th step.
- `python`: an MLP whose loop computes per-sample loss weights in a Python loop; after: the
  same weights from one vectorised expression (a CPU job's host work, recovered).

Each job runs unprofiled warm-up steps first, so worker processes and queues are full when
the profiler's steps begin. Run: `python sample_traces/make_twins.py [--only NAME] [--steps N]`
(writes `sample_traces/twins/<name>/{before,after}/`).
"""

from __future__ import annotations

import argparse
import math
import os
import time
from collections.abc import Callable, Iterator
from contextlib import nullcontext
from pathlib import Path

import _common
import make_copy_heavy
import make_dataloader_starved
import make_ddp_gloo
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch import nn
from torch.utils.data import DataLoader

WARMUP_STEPS = 4
"""Unprofiled steps before the profiler starts (worker queues fill, allocations settle)."""
ACCUMULATE = 4
PYTHON_WEIGHTS = 64 * 2_400


def profiled(out: Path, worker: str, active: int, steps: Iterator[Callable[[], None]]) -> None:
    """Run `WARMUP_STEPS` steps, then the profiler's schedule, one `prof.step()` per step."""
    for _ in range(WARMUP_STEPS):
        next(steps)()
    with _common.make_profiler(out, worker, active) as prof:
        for _ in range(_common.total_steps(active)):
            next(steps)()
            prof.step()


def dataloader_job(out: Path, active: int, fixed: bool) -> None:
    torch.set_num_threads(1)
    job = make_dataloader_starved
    count = job.BATCH * (WARMUP_STEPS + _common.total_steps(active) + 2)
    dataset = job.SlowStorageDataset(count, job.SAMPLE_LATENCY_S)
    workers = {"num_workers": 8, "persistent_workers": True} if fixed else {"num_workers": 0}
    loader = DataLoader(dataset, batch_size=job.BATCH, shuffle=True, **workers)  # type: ignore[arg-type]
    model = job.build_model()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()

    def steps() -> Iterator[Callable[[], None]]:
        for inputs, labels in loader:

            def step(inputs: torch.Tensor = inputs, labels: torch.Tensor = labels) -> None:
                optimizer.zero_grad(set_to_none=True)
                loss_fn(model(inputs), labels).backward()
                optimizer.step()

            yield step

    # The loader's fetch happens in `next(...)`, inside the profiled step, as in a real loop.
    profiled(out, "worker0", active, steps())


def copies_job(out: Path, active: int, fixed: bool) -> None:
    job = make_copy_heavy
    batches = iter(job.build_batches(WARMUP_STEPS + _common.total_steps(active)))
    model = job.build_model().to(memory_format=torch.channels_last)  # type: ignore[call-overload]
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()

    def step() -> None:
        images, labels = next(batches)
        if fixed:
            x = images.to(torch.float32, memory_format=torch.channels_last)
        else:
            x, _kept = job.preprocess(images)
        optimizer.zero_grad(set_to_none=True)
        loss_fn(model(x), labels).backward()
        optimizer.step()

    profiled(out, "worker0", active, iter(lambda: step, None))


def python_job(out: Path, active: int, fixed: bool) -> None:
    torch.set_num_threads(1)
    model = make_dataloader_starved.build_model()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    inputs = torch.randn(64, make_dataloader_starved.FEATURES)
    labels = torch.randint(0, make_dataloader_starved.CLASSES, (64,))
    loss_fn = nn.CrossEntropyLoss(reduction="none")

    def weights() -> torch.Tensor:
        if fixed:
            curve = torch.exp(-1e-5 * torch.arange(PYTHON_WEIGHTS, dtype=torch.float64))
            return curve.reshape(64, -1).mean(dim=1).float()
        # Per-sample weights from a decay curve, element by element in Python.
        decay = [math.exp(-1e-5 * i) for i in range(PYTHON_WEIGHTS)]
        per = PYTHON_WEIGHTS // 64
        return torch.tensor([sum(decay[k * per : (k + 1) * per]) / per for k in range(64)])

    def step() -> None:
        optimizer.zero_grad(set_to_none=True)
        (loss_fn(model(inputs), labels) * weights()).mean().backward()
        optimizer.step()

    profiled(out, "worker0", active, iter(lambda: step, None))


def ddp_rank(rank: int, out: Path, active: int, fixed: bool) -> None:
    torch.set_num_threads(1)
    _common.seed_everything()
    dist.init_process_group("gloo", rank=rank, world_size=make_ddp_gloo.WORLD_SIZE)
    try:
        model = nn.parallel.DistributedDataParallel(
            make_ddp_gloo.build_model(), gradient_as_bucket_view=True
        )
        optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
        loss_fn = nn.CrossEntropyLoss()
        generator = torch.Generator().manual_seed(_common.SEED + rank)
        width, batch = make_ddp_gloo.WIDTH, make_ddp_gloo.BATCH
        counter = iter(range(10**6))

        def step() -> None:
            index = next(counter)
            inputs = torch.randn(batch, width, generator=generator)
            labels = torch.randint(0, make_ddp_gloo.CLASSES, (batch,), generator=generator)
            syncs = not fixed or (index + 1) % ACCUMULATE == 0
            with nullcontext() if syncs else model.no_sync():
                loss_fn(model(inputs), labels).backward()
            if syncs:
                optimizer.step()
                optimizer.zero_grad(set_to_none=True)

        profiled(out, f"rank{rank}", active, iter(lambda: step, None))
        dist.barrier()
    finally:
        dist.destroy_process_group()


def ddp_job(out: Path, active: int, fixed: bool) -> None:
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(make_ddp_gloo.free_port())
    mp.spawn(ddp_rank, args=(out, active, fixed), nprocs=make_ddp_gloo.WORLD_SIZE, join=True)  # type: ignore[attr-defined,no-untyped-call]


JOBS: dict[str, Callable[[Path, int, bool], None]] = {
    "dataloader": dataloader_job,
    "copies": copies_job,
    "ddp": ddp_job,
    "python": python_job,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=sorted(JOBS), help="make one pair only")
    parser.add_argument("--out", type=Path, default=_common.HERE / "twins")
    parser.add_argument("--steps", type=int, default=6, help="profiled steps (default: 6)")
    args = parser.parse_args()
    for name in [args.only] if args.only else sorted(JOBS):
        for fixed in (False, True):
            started = time.perf_counter()
            _common.seed_everything()
            folder = args.out / name / ("after" if fixed else "before")
            JOBS[name](folder, args.steps, fixed)
            for trace in sorted(folder.glob("*.pt.trace.json*")):
                _common.report(f"{name}/{folder.name}", folder, trace.name.split(".")[0], started)


if __name__ == "__main__":
    main()
