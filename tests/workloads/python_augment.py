"""A job starved by CPU-bound augmentation written in Python, in the Dataset, `--num-workers 0`.

Each sample runs a pure-Python loop (a stand-in for PIL or per-pixel Python transforms) before
it becomes a tensor: the main process spends most of each step there, holding the GIL. Workers
move that work to other processes, which on two cores can at most about halve the step.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch
from torch.utils.data import DataLoader, Dataset

sys.path.insert(0, str(Path(__file__).resolve().parent))
from own_rate import mlp, train

FEATURES = 128


class Augmented(Dataset[tuple[torch.Tensor, torch.Tensor]]):
    def __init__(self, size: int, work: int) -> None:
        self.size, self.work = size, work

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, index: int) -> tuple[torch.Tensor, torch.Tensor]:
        state, values = index + 1, []
        for _ in range(FEATURES):
            for _ in range(self.work):
                state = (state * 1103515245 + 12345) % 2**31
            values.append(state / 2**31 - 0.5)
        return torch.tensor(values), torch.tensor(index % 10)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=10**9)
    parser.add_argument("--num-workers", type=int, default=0)
    parser.add_argument("--work", type=int, default=16, help="Python iterations per feature")
    args = parser.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(1)
    loader = DataLoader(
        Augmented(20_000, args.work), batch_size=32, shuffle=True, num_workers=args.num_workers
    )
    train(loader, mlp(FEATURES, 1024), args.steps)


if __name__ == "__main__":
    main()
