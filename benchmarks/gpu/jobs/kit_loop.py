"""What the planted GPU jobs share: their options and a clock of their own.

Each job prints, every `--every` steps, one line the kit reads as outside truth:

    KIT step=120 t_s=12.3456 gpu_ms=950.1 window=10

`t_s` is seconds since the job's first step began (its own `perf_counter`), `gpu_ms` the CUDA-event
time of `window` steps' GPU work (from an event recorded before the step's device work to one
recorded after it; None on the CPU): the steps whose events the GPU has passed by then
(`Event.query`, which never waits), so the clock adds no synchronisation to the job; a step
still queued is counted on a later line. Over many lines their sum is the steps' GPU time.
`--device cpu` runs the same code on the CPU (the kit's dry run and the tests use it).
"""

from __future__ import annotations

import argparse
import contextlib
import time
from collections.abc import Callable, Sequence
from typing import Any

import torch

LINE_PREFIX = "KIT"


def parser(description: str) -> argparse.ArgumentParser:
    """The options every job takes; a job adds its own sizes."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--device", default="cuda", help="cuda (default) or cpu")
    parser.add_argument("--steps", type=int, default=10**9, help="stop after this many steps")
    parser.add_argument("--seconds", type=float, default=None, help="stop after this long")
    parser.add_argument("--every", type=int, default=10, help="steps between KIT lines")
    parser.add_argument("--scale", type=float, default=1.0, help="size factor (cpu: small)")
    return parser


def device_of(args: argparse.Namespace) -> torch.device:
    """The device asked for; one line and exit 2 where CUDA is asked for but absent."""
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        raise SystemExit(f"--device {args.device}: CUDA is not available on this machine")
    return torch.device(args.device)


def sized(value: int, scale: float, minimum: int = 1) -> int:
    return max(minimum, int(value * scale))


class StepClock:
    """Times each step from the job's own clock and, on CUDA, with a pair of CUDA events."""

    def __init__(self, args: argparse.Namespace, device: torch.device) -> None:
        self.steps, self.seconds, self.every = args.steps, args.seconds, max(args.every, 1)
        self.cuda = device.type == "cuda"
        self.step = 0
        self.started = time.perf_counter()
        self._pairs: list[tuple[Any, Any]] = []
        self._begun: Any = None

    def begin(self) -> None:
        """Just before the step's device work is queued."""
        if self.step == 0:
            self.started = time.perf_counter()
        if self.cuda:
            self._begun = torch.cuda.Event(enable_timing=True)  # type: ignore[no-untyped-call]
            self._begun.record()

    def end(self) -> bool:
        """Just after the step's device work is queued; False once the job should stop."""
        if self.cuda and self._begun is not None:
            ended = torch.cuda.Event(enable_timing=True)  # type: ignore[no-untyped-call]
            ended.record()
            self._pairs.append((self._begun, ended))
        self.step += 1
        if self.step % self.every == 0:
            self._print()
        elapsed_s = time.perf_counter() - self.started
        return self.step < self.steps and (self.seconds is None or elapsed_s < self.seconds)

    def _print(self) -> None:
        gpu_ms: float | None = None
        if self.cuda:
            # Only pairs already done are read (`query` never waits): the job's clock must not
            # add synchronisations of its own to the truths it plants; the rest wait a line.
            done: list[tuple[Any, Any]] = []
            pending: list[tuple[Any, Any]] = []
            for pair in self._pairs:
                (done if pair[1].query() else pending).append(pair)
            self._pairs = pending
            gpu_ms = sum(float(a.elapsed_time(b)) for a, b in done)
            window = len(done)
        else:
            window = self.every
        elapsed_s = time.perf_counter() - self.started
        gpu = "None" if gpu_ms is None else f"{gpu_ms:.3f}"
        line = f"{LINE_PREFIX} step={self.step} t_s={elapsed_s:.4f} gpu_ms={gpu} window={window}"
        print(line, flush=True)


def entry(main: Callable[[], None]) -> None:
    """Runs a job's `main`; SIGINT (how `torchtop run --for` stops a job) ends it quietly."""
    with contextlib.suppress(KeyboardInterrupt):
        main()


def announce(name: str, device: torch.device, sizes: Sequence[tuple[str, object]]) -> None:
    """One line naming the job, its device and its sizes, before the first step."""
    where = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"
    described = " ".join(f"{key}={value}" for key, value in sizes)
    print(f"{name} on {where} (torch {torch.__version__}): {described}", flush=True)
