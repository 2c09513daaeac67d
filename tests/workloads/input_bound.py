"""A planted input-bound job: every sample waits 25 ms on "storage", the math is tiny.

Its step time is almost all DataLoader wait, spent asleep, so two copies of it measured at the
same moment agree on a loaded machine: the test compares what two watchers see, not how busy
the machine was. Runs until killed.
"""

import time

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset


class SlowStorage(Dataset[tuple[torch.Tensor, torch.Tensor]]):
    def __len__(self) -> int:
        return 1_000_000

    def __getitem__(self, index: int) -> tuple[torch.Tensor, torch.Tensor]:
        time.sleep(0.025)
        return torch.full((32,), float(index % 7)), torch.tensor(index % 4)


torch.manual_seed(0)
model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 4))
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
print("training: input-bound", flush=True)
for features, labels in DataLoader(SlowStorage(), batch_size=16):
    loss = nn.functional.cross_entropy(model(features), labels)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
