"""A loop with no optimizer that marks its steps with `torchtop.step()` / `step_context()`.

At step `--request-at` it asks for a profiler window the way the dashboard does, by creating
`RUN/requests/window`.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import torch

from torchtop.agent.api import step, step_context


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--step-ms", type=float, default=25.0)
    parser.add_argument("--request-at", type=int, default=3)
    return parser.parse_args()


def request_window() -> None:
    request = Path(os.environ["TORCHTOP_RUN_DIR"]) / "requests" / "window"
    request.parent.mkdir(parents=True, exist_ok=True)
    request.touch()


def work(weights: torch.Tensor, step_s: float) -> None:
    (weights @ weights).sum().item()
    time.sleep(step_s)


def main() -> int:
    args = parse_args()
    weights = torch.randn(64, 64)
    for index in range(args.steps):
        if index == args.request_at:
            request_window()
        if index % 2:
            with step_context():
                work(weights, args.step_ms / 1000)
        else:
            work(weights, args.step_ms / 1000)
            step()
    print("manual loop done")
    return 0


if __name__ == "__main__":
    sys.exit(main())
