"""A tiny training job that writes its own lines to stdout and stderr while the agent profiles it.

Each step writes `job step N` to stderr from the training thread; a second thread writes
`job thread K` to stderr every millisecond or so, so some of its lines land while a profiler
window is starting or stopping; at the end stdout gets `job: N steps, the thread wrote K lines`.
Everything the job writes is known, so a test can check that its streams hold exactly these
lines: none lost, none added (by the profiler).
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time

import torch
from torch import nn


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--steps", type=int, default=60)
    return parser.parse_args()


def chatter(stop: threading.Event, written: list[int]) -> None:
    count = 0
    while not stop.is_set():
        # One write() per line, so a line is never split between the two streams' writers.
        os.write(2, f"job thread {count}\n".encode())
        count += 1
        time.sleep(0.001)
    written.append(count)


def main() -> int:
    args = parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = nn.Sequential(nn.Linear(128, 512), nn.ReLU(), nn.Linear(512, 10))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    inputs, labels = torch.randn(32, 128), torch.randint(0, 10, (32,))
    stop = threading.Event()
    written: list[int] = []
    thread = threading.Thread(target=chatter, args=(stop, written))
    thread.start()
    for step in range(args.steps):
        optimizer.zero_grad()
        nn.functional.cross_entropy(model(inputs), labels).backward()
        optimizer.step()
        os.write(2, f"job step {step}\n".encode())
        time.sleep(0.005)
    stop.set()
    thread.join()
    print(f"job: {args.steps} steps, the thread wrote {written[0]} lines")
    return 0


if __name__ == "__main__":
    sys.exit(main())
