"""A job the old thread-oversubscription rule called oversubscribed: 2 DataLoader workers do
CPU transforms while the training process runs its math on torch's default pool (one thread per
core).

The old rule counted torch's threads in every worker (threads x (workers + 1) = 6 on 2 cores),
but PyTorch's worker loop sets one thread per worker, and here the workers, once their
prefetched batches are ready, use about 1% of a core each (host samples): the job is not
oversubscribed, and tune must not cut its pool.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

FEATURES = 512


class TransformedDataset(Dataset[tuple[torch.Tensor, int]]):
    """Each sample is built by a few small matrix products (a stand-in for augmentation)."""

    def __len__(self) -> int:
        return 1_000_000

    def __getitem__(self, index: int) -> tuple[torch.Tensor, int]:
        generator = torch.Generator().manual_seed(index)
        x = torch.randn(64, 64, generator=generator)
        for _ in range(4):
            x = torch.tanh(x @ x.T / 8)
        return x.flatten()[:FEATURES], index % 10


def main() -> None:
    torch.manual_seed(0)
    loader = DataLoader(TransformedDataset(), batch_size=64, num_workers=2)
    model = nn.Sequential(
        nn.Linear(FEATURES, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 10)
    )
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    print(f"training with {torch.get_num_threads()} threads", flush=True)
    for inputs, labels in loader:
        optimizer.zero_grad()
        nn.functional.cross_entropy(model(inputs), labels).backward()
        optimizer.step()


if __name__ == "__main__":
    main()
