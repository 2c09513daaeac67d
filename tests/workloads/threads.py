"""A job whose intra-op threads oversubscribe the cores: data in memory, math in the main process.

It sizes torch's pool itself from `OMP_NUM_THREADS`, as launch scripts carried over from a
cluster do (torch alone would cap the variable at the cores; `torch.set_num_threads` is not
capped). The benchmark starts it with `OMP_NUM_THREADS=8` on a 2-core machine: OpenMP's eight
threads then wait for each other at every operator while the kernel shares two cores among
them. The thread-settings fix (`OMP_NUM_THREADS` at most the cores) recovers it.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import torch
from torch.utils.data import DataLoader, TensorDataset

sys.path.insert(0, str(Path(__file__).resolve().parent))
from own_rate import mlp, train


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=10**9)
    parser.add_argument("--batch-size", type=int, default=64)
    args = parser.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "0")) or torch.get_num_threads())
    data = TensorDataset(torch.randn(4096, 256), torch.randint(0, 10, (4096,)))
    loader = DataLoader(data, batch_size=args.batch_size, shuffle=True)
    train(loader, mlp(256, 512), args.steps)


if __name__ == "__main__":
    main()
