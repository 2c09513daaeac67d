"""What live module timing costs a job while its hooks are installed, per module call and per step.

The agent times modules with torch's global forward hooks (`agent.module_timer`) for a bounded
number of steps on request, and removes them after; outside those steps the cost is nil (the
job's modules take torch's no-hook fast path again). Inside them every `nn.Module` call pays the
two hooks, and the slow path `_call_impl` takes once any hook exists.

First the cost per module call alone: an `nn.Identity` called 20,000 times, bare and hooked,
the fastest of several blocks each (the minimum is what the code costs; a loaded machine only
ever adds). Then two CPU models, each run forward and backward with an SGD step in one process,
one step bare and one timed in turn (rotating the order, so drift spreads over both), the
median step of each compared, beside the cost the per-call figure predicts for the model's
module calls. torch runs on one thread: on a shared machine two OpenMP threads waiting on each
other's barrier made step times swing by 2-5x, which hid everything else.

* ``calls``: 200 `nn.Linear(8, 8)` in a `Sequential`: tiny modules, so the per-call cost shows;
* ``gpt``: a nanoGPT-shaped stack of blocks (attention and MLP, 2 layers, 64 wide, batch 8 x 64
  tokens, the size of the nanoGPT check in docs): a realistic ratio of module calls to math.

Usage::

    PYTHONPATH=src python benchmarks/module_hooks_cost.py [--rounds 5] [--steps 20]
"""

from __future__ import annotations

import argparse
import statistics
import threading
import time
from collections.abc import Callable

import torch
from torch import nn

from torchtop.agent.module_timer import ModuleTimer


class Block(nn.Module):
    def __init__(self, width: int, heads: int) -> None:
        super().__init__()
        self.ln_1, self.ln_2 = nn.LayerNorm(width), nn.LayerNorm(width)
        self.attn = nn.MultiheadAttention(width, heads, batch_first=True)
        self.mlp = nn.Sequential(
            nn.Linear(width, 4 * width), nn.GELU(), nn.Linear(4 * width, width)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.ln_1(x)
        x = x + self.attn(h, h, h, need_weights=False)[0]
        out: torch.Tensor = x + self.mlp(self.ln_2(x))
        return out


def models() -> dict[str, tuple[nn.Module, torch.Tensor]]:
    calls = nn.Sequential(*(nn.Linear(8, 8) for _ in range(200)))
    gpt = nn.Sequential(*(Block(64, 2) for _ in range(2)), nn.Linear(64, 65))
    return {"calls": (calls, torch.randn(4, 8)), "gpt": (gpt, torch.randn(8, 64, 64))}


def module_calls(model: nn.Module, x: torch.Tensor) -> int:
    timer = ModuleTimer(threading.get_ident())
    timer.install()
    model(x)
    timer.remove()
    return sum(t.calls for t in timer.timings())


def block_s(step: Callable[[], None], steps: int, timed: bool) -> float:
    """Seconds per step over `steps` steps, with the hooks installed or not."""
    timer = ModuleTimer(threading.get_ident())
    if timed:
        timer.install()
    start = time.perf_counter()
    for _ in range(steps):
        step()
        timer.step_ended()
    per_step = (time.perf_counter() - start) / steps
    timer.remove()
    return per_step


def per_call_us(rounds: int, calls: int = 20_000) -> float:
    """What the two hooks and torch's slow call path add to one module call (fastest blocks)."""
    module, x = nn.Identity(), torch.zeros(1)

    def step() -> None:
        for _ in range(calls):
            module(x)

    bare = min(block_s(step, 1, False) for _ in range(rounds))
    timed = min(block_s(step, 1, True) for _ in range(rounds))
    print(f"per call: bare {bare / calls * 1e6:.2f} us, hooked {timed / calls * 1e6:.2f} us")
    return (timed - bare) / calls * 1e6


def measure(
    name: str, model: nn.Module, x: torch.Tensor, rounds: int, steps: int, call_us: float
) -> None:
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)

    def step() -> None:
        optimizer.zero_grad()
        model(x).float().pow(2).mean().backward()
        optimizer.step()

    for _ in range(3):
        step()
    found: dict[bool, list[float]] = {False: [], True: []}
    for index in range(rounds * steps):
        for hooked in (False, True) if index % 2 == 0 else (True, False):
            found[hooked].append(block_s(step, 1, hooked))
    bare, timed = statistics.median(found[False]), statistics.median(found[True])
    calls = module_calls(model, x)
    predicted = calls * call_us / 1000
    print(
        f"{name:6s} {calls:4d} module calls/step  bare {bare * 1000:8.2f} ms  "
        f"timed {timed * 1000:8.2f} ms/step  measured {(timed - bare) / bare:+6.1%}  "
        f"predicted +{predicted:.2f} ms ({predicted / (bare * 1000):.1%})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--only", choices=("calls", "gpt"))
    args = parser.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(1)
    call_us = per_call_us(args.rounds)
    for name, (model, x) in models().items():
        if args.only in (None, name):
            measure(name, model, x, args.rounds, args.steps, call_us)


if __name__ == "__main__":
    main()
