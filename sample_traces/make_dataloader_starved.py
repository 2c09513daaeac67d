"""Make `dataloader_starved/`: a training job that spends most of each step waiting for data.

What it shows: the input pipeline, not the model, is the bottleneck. The `Dataset`
sleeps a few milliseconds in `__getitem__` for every sample, standing in for per-sample
storage latency (a network file system, object storage, slow decoding), and the
`DataLoader` runs with `num_workers=0`, so the training loop waits for every batch on the
main thread. The model is a small MLP whose forward/backward/step take a fraction of that.

In the trace, `enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__` takes well
over half of every `ProfilerStep#N`; `torchtop analyze` must call it a `dataloader`
bottleneck (the fix: more workers, prefetching, faster storage).

Run: `python sample_traces/make_dataloader_starved.py [--out DIR] [--steps N]`.
"""

from __future__ import annotations

import time

import _common
import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

JOB = "dataloader_starved"
WORKER = "worker0"
BATCH = 32
FEATURES = 1024
CLASSES = 10
SAMPLE_LATENCY_S = 0.003  # per-sample "storage" latency: 32 x 3 ms = ~96 ms per batch


class SlowStorageDataset(Dataset[tuple[torch.Tensor, torch.Tensor]]):
    """Synthetic samples, each behind a fixed read latency."""

    def __init__(self, length: int, latency_s: float) -> None:
        generator = torch.Generator().manual_seed(_common.SEED)
        self.inputs = torch.randn(length, FEATURES, generator=generator)
        self.labels = torch.randint(0, CLASSES, (length,), generator=generator)
        self.latency_s = latency_s

    def __len__(self) -> int:
        return len(self.labels)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, torch.Tensor]:
        time.sleep(self.latency_s)  # the "read" of one sample
        return self.inputs[index], self.labels[index]


def build_model() -> nn.Module:
    return nn.Sequential(
        nn.Linear(FEATURES, 1024),
        nn.ReLU(),
        nn.Linear(1024, 1024),
        nn.ReLU(),
        nn.Linear(1024, CLASSES),
    )


def main() -> None:
    args = _common.parse_args(JOB, __doc__.splitlines()[0], default_steps=6)
    started = time.perf_counter()
    _common.seed_everything()
    torch.set_num_threads(1)

    steps = _common.total_steps(args.steps)
    dataset = SlowStorageDataset(BATCH * steps, SAMPLE_LATENCY_S)
    loader = DataLoader(dataset, batch_size=BATCH, shuffle=True, num_workers=0)
    model = build_model()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
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
