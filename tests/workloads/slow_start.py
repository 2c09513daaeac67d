"""A job slow to start and slow to step: `--startup-s` from its launch to its first step (its
imports, then a sleep, as a large model's set-up and a data set's indexing take), then steps
that wait on a DataLoader with no workers (each sample sleeps `--sample-sleep-ms`, 8 to a
batch: 375 ms a sample is a 3 s step). `tune --for` must size its trial to such a job, or say
how long one trial needs (issue 31)."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

LAUNCHED_S = time.monotonic()  # before torch's import, which the start-up counts too


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--startup-s", type=float, default=20.0)
    parser.add_argument("--sample-sleep-ms", type=float, default=375.0)
    parser.add_argument("--steps", type=int, default=100_000)
    args = parser.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from starved_loop import train

    time.sleep(max(args.startup_s - (time.monotonic() - LAUNCHED_S), 0.0))
    train(args.steps, 0, args.sample_sleep_ms, None)
    return 0


if __name__ == "__main__":
    sys.exit(main())
