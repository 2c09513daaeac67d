"""A job for the long run's findings, each planted on request: `--leak-mib` kept every step
(written, so resident), a `save_checkpoint()` that sleeps `--stall-s` every `--stall-every`th
step, steps `--slow-by` slower from step `--slow-from` on, and random slow steps (`--random-p`
of them, `--random-s` each, seeded). A step is a small model's forward and backward and a
sleep to `--step-s`, so its length holds on a loaded machine. With `--account FILE` it writes
there, by its own clock, the seconds its loop took after its first two steps (torchtop's
warm-up) and the seconds of them spent in `save_checkpoint()`: the truth a stall's share is
checked against.
"""

from __future__ import annotations

import argparse
import json
import random
import time

import torch

MIB = 2**20


def save_checkpoint(model: torch.nn.Module, seconds: float) -> None:
    time.sleep(seconds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--step-s", type=float, default=0.07)
    parser.add_argument("--leak-mib", type=float, default=0.0)
    parser.add_argument("--stall-every", type=int, default=0)
    parser.add_argument("--stall-s", type=float, default=1.2)
    parser.add_argument("--slow-from", type=int, default=0)
    parser.add_argument("--slow-by", type=float, default=0.0)
    parser.add_argument("--random-p", type=float, default=0.0)
    parser.add_argument("--random-s", type=float, default=0.5)
    parser.add_argument("--account", default=None)
    args = parser.parse_args()
    torch.set_num_threads(1)
    chance = random.Random(7)
    model = torch.nn.Linear(32, 32)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    kept = []
    counted_from, stalled_s = 0.0, 0.0
    for step in range(args.steps):
        if step == 2:
            counted_from, stalled_s = time.perf_counter(), 0.0
        began = time.perf_counter()
        model(torch.randn(8, 32)).sum().backward()
        optimizer.step()
        optimizer.zero_grad()
        if args.leak_mib:
            kept.append(torch.ones(int(args.leak_mib * MIB) // 4))
        slower = args.slow_from and step >= args.slow_from
        length = args.step_s * (1 + args.slow_by if slower else 1)
        time.sleep(max(length - (time.perf_counter() - began), 0.0))
        if args.stall_every and step % args.stall_every == args.stall_every - 1:
            saving = time.perf_counter()
            save_checkpoint(model, args.stall_s)
            stalled_s += time.perf_counter() - saving
        if chance.random() < args.random_p:
            time.sleep(args.random_s)
    if args.account:
        loop_s = time.perf_counter() - counted_from
        with open(args.account, "w") as account:
            json.dump({"loop_s": loop_s, "stalled_s": stalled_s}, account)


if __name__ == "__main__":
    main()
