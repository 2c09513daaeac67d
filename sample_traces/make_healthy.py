"""Make `healthy/`: a compute-bound training job, the baseline with nothing to fix in the input.

What it shows: a step where the model's own math dominates. The whole data set is built
in memory up front (a `TensorDataset`, no sleeps, no conversions) and each batch is one
indexing call on it, so fetching a batch costs next to nothing, while the model (an MLP
with 2048-wide `Linear` layers at batch 128, trained with AdamW) is big enough that
forward, backward and the optimizer step take nearly all of every `ProfilerStep#N`. The
DataLoader's share stays at a few tenths of a percent and copies are negligible.

On a CPU-only job the math itself runs on the CPU, so `torchtop analyze` must call this a
`cpu` bottleneck: the time goes to real operator work, not waiting or copying.

Run: `python sample_traces/make_healthy.py [--out DIR] [--steps N]`.
"""

from __future__ import annotations

import time

import _common
import torch
from torch import nn
from torch.utils.data import BatchSampler, DataLoader, RandomSampler, TensorDataset

JOB = "healthy"
WORKER = "worker0"
BATCH = 128
FEATURES = 1024
HIDDEN = 2048
CLASSES = 100


def build_dataset(samples: int) -> TensorDataset:
    generator = torch.Generator().manual_seed(_common.SEED)
    inputs = torch.randn(samples, FEATURES, generator=generator)
    labels = torch.randint(0, CLASSES, (samples,), generator=generator)
    return TensorDataset(inputs, labels)


def build_model() -> nn.Module:
    return nn.Sequential(
        nn.Linear(FEATURES, HIDDEN),
        nn.GELU(),
        nn.Linear(HIDDEN, HIDDEN),
        nn.GELU(),
        nn.Linear(HIDDEN, HIDDEN),
        nn.GELU(),
        nn.Linear(HIDDEN, CLASSES),
    )


def main() -> None:
    args = _common.parse_args(JOB, __doc__.splitlines()[0], default_steps=6)
    started = time.perf_counter()
    _common.seed_everything()

    steps = _common.total_steps(args.steps)
    dataset = build_dataset(BATCH * steps)
    # Fetch each batch with one indexing call (the sampler yields whole index lists and
    # `batch_size=None` turns off per-sample collation): data already in memory costs ~nothing.
    sampler = BatchSampler(RandomSampler(dataset), batch_size=BATCH, drop_last=True)
    loader = DataLoader(dataset, sampler=sampler, batch_size=None)
    model = build_model()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    loss_fn = nn.CrossEntropyLoss()

    with _common.make_profiler(args.out, WORKER, args.steps) as prof:
        for inputs, labels in loader:
            optimizer.zero_grad(set_to_none=True)
            loss = loss_fn(model(inputs), labels)
            loss.backward()
            optimizer.step()
            prof.step()

    _common.report(JOB, args.out, WORKER, started)


if __name__ == "__main__":
    main()
