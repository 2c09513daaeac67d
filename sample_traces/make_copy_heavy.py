"""Make `copy_heavy/`: a training job whose steps go mostly to copies and conversions.

What it shows: time lost moving bytes around rather than computing. The images sit in
memory as uint8 and every step runs a careless preprocessing chain on the training
thread: a uint8 -> float32 conversion, a round trip through float64 "for precision", a
`.clone()` kept "for logging", a permute to NHWC made `.contiguous()`, and a conversion to
`channels_last`. Each of these rewrites the whole batch (64 x 3 x 224 x 224, ~38 MB in
float32). The model after it is deliberately light (a strided conv, pooling, a `Linear`).

In the trace the top-level `aten::to` / `aten::_to_copy` / `aten::copy_` /
`aten::contiguous` / `aten::clone` events take well over 40% of every `ProfilerStep#N`;
`torchtop analyze` must call it a `memcpy` bottleneck (the fix: convert once, in the
right dtype and layout, or do it in the data pipeline off the training thread).

Run: `python sample_traces/make_copy_heavy.py [--out DIR] [--steps N]`.
"""

from __future__ import annotations

import time

import _common
import torch
from torch import nn

JOB = "copy_heavy"
WORKER = "worker0"
BATCH = 64
CHANNELS = 3
SIZE = 224
CLASSES = 10


def build_batches(count: int) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """`count` uint8 image batches with labels, already in memory (no DataLoader cost)."""
    generator = torch.Generator().manual_seed(_common.SEED)
    return [
        (
            torch.randint(
                0, 256, (BATCH, CHANNELS, SIZE, SIZE), dtype=torch.uint8, generator=generator
            ),
            torch.randint(0, CLASSES, (BATCH,), generator=generator),
        )
        for _ in range(count)
    ]


def build_model() -> nn.Module:
    return nn.Sequential(
        nn.Conv2d(CHANNELS, 8, kernel_size=4, stride=4),
        nn.ReLU(),
        nn.AdaptiveAvgPool2d(4),
        nn.Flatten(),
        nn.Linear(8 * 4 * 4, CLASSES),
    )


def preprocess(images: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The wasteful chain: every line below copies the whole batch at least once."""
    x = images.to(torch.float32)  # uint8 -> float32
    x = x.to(torch.float64)  # a round trip through float64 "for precision"...
    x = x.to(torch.float32)  # ...and straight back
    kept = x.clone()  # a copy "for logging"
    nhwc = x.permute(0, 2, 3, 1).contiguous()  # an NHWC copy
    x = nhwc.permute(0, 3, 1, 2).contiguous()  # and back to NCHW
    x = x.to(memory_format=torch.channels_last)  # then channels_last after all
    return x, kept


def main() -> None:
    args = _common.parse_args(JOB, __doc__.splitlines()[0], default_steps=6)
    started = time.perf_counter()
    _common.seed_everything()

    batches = build_batches(_common.total_steps(args.steps))
    # (torch's stubs omit Module.to's memory_format keyword; it exists at runtime)
    model = build_model().to(memory_format=torch.channels_last)  # type: ignore[call-overload]
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()

    with _common.make_profiler(args.out, WORKER, args.steps) as prof:
        for images, labels in batches:
            inputs, kept = preprocess(images)
            optimizer.zero_grad(set_to_none=True)
            loss = loss_fn(model(inputs), labels)
            loss.backward()
            optimizer.step()
            del kept
            prof.step()

    _common.report(JOB, args.out, WORKER, started)


if __name__ == "__main__":
    main()
