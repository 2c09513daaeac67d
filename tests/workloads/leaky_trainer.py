"""A small real training job for the hour-long run (docs/benchmarks.md): a two-layer network
learning a fixed random teacher on one thread, with two planted faults. Each step keeps a copy
of its hidden activations (`--batch` x `--hidden` float32, 32 KiB by default), the classic
history kept across steps; and every `--save-every`th step `save_checkpoint()` really writes
the model and optimizer with torch.save, then waits out the rest of `--save-s`, so each stall
costs a known time on a loaded machine. A step is padded to `--step-s` for the same reason.

The job's own clock is the truth the findings are checked against: on exit (torchtop's stop
included, through the finally block) it writes to `--account FILE` the loop's seconds after its
first two steps, the seconds of them spent in save_checkpoint(), the steps and saves done, the
bytes kept a step, and the loss at the start, every 10,000 steps and at the end (that it
learns).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from dataclasses import asdict, dataclass, field

import torch


def save_checkpoint(
    model: torch.nn.Module, optimizer: torch.optim.Optimizer, path: str, seconds: float
) -> None:
    began = time.perf_counter()
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict()}, path)
    time.sleep(max(seconds - (time.perf_counter() - began), 0.0))


def parse() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--step-s", type=float, default=0.05)
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--save-every", type=int, default=600)
    parser.add_argument("--save-s", type=float, default=1.5)
    parser.add_argument("--checkpoint", default="checkpoint.pt")
    parser.add_argument("--account", default=None)
    parser.add_argument("--steps", type=int, default=0, help="stop after this many (0: never)")
    parser.add_argument("--rss-every", type=int, default=0, help="read VmRSS every N steps")
    return parser.parse_args()


def resident_bytes() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@dataclass
class Account:
    """The job's own clock and counts, written on exit (`--account`)."""

    steps: int = 0
    saves: int = 0
    loop_s: float = 0.0
    stalled_s: float = 0.0
    kept_bytes_per_step: int = 0
    losses: list[tuple[int, float]] = field(default_factory=list)
    rss: list[tuple[int, int]] = field(default_factory=list)
    """(step, resident set) read by the job itself: the leak's truth as the OS counts it."""


def main() -> None:
    args = parse()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    teacher = torch.randn(32, 4)
    model = torch.nn.Sequential(
        torch.nn.Linear(32, args.hidden), torch.nn.ReLU(), torch.nn.Linear(args.hidden, 4)
    )
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    history: list[torch.Tensor] = []
    account = Account(kept_bytes_per_step=args.batch * args.hidden * 4)
    counted_from, loss = time.perf_counter(), torch.zeros(())
    try:
        while not args.steps or account.steps < args.steps:
            step = account.steps
            if args.rss_every and step % args.rss_every == 0:
                account.rss.append((step, resident_bytes()))
            if step == 2:
                counted_from, account.stalled_s = time.perf_counter(), 0.0
            began = time.perf_counter()
            inputs = torch.randn(args.batch, 32)
            hidden = model[1](model[0](inputs))
            loss = torch.nn.functional.mse_loss(model[2](hidden), inputs @ teacher)
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
            history.append(hidden.detach().clone())
            if step in (0, 1000) or step % 10000 == 0:
                account.losses.append((step, loss.item()))
            time.sleep(max(args.step_s - (time.perf_counter() - began), 0.0))
            if step % args.save_every == args.save_every - 1:
                saving = time.perf_counter()
                save_checkpoint(model, optimizer, args.checkpoint, args.save_s)
                account.stalled_s += time.perf_counter() - saving
                account.saves += 1
            account.steps = step + 1
    finally:
        account.loop_s = time.perf_counter() - counted_from
        account.losses.append((account.steps, loss.item()))
        if args.account:
            with open(args.account + ".tmp", "w") as out:
                json.dump(asdict(account), out)
            os.replace(args.account + ".tmp", args.account)


if __name__ == "__main__":
    main()
