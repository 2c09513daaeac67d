"""A DataLoader-starved job whose script exposes `--num-workers` (default 0) through argparse."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from starved_loop import train


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--steps", type=int, default=100_000)
    parser.add_argument("--num-workers", type=int, default=0)
    parser.add_argument("--sample-sleep-ms", type=float, default=3.0)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--exit-status", type=int, default=0)
    args = parser.parse_args()
    train(args.steps, args.num_workers, args.sample_sleep_ms, args.out)
    return int(args.exit_status)


if __name__ == "__main__":
    sys.exit(main())
