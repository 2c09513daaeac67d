"""A job whose steps are all math on data already in memory: more DataLoader workers cannot help.

One intra-op thread, so its speed does not swing with what else the cores run. Runs until
stopped.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
torch.set_num_threads(1)
data = TensorDataset(torch.randn(2048, 512), torch.randint(0, 10, (2048,)))
loader = DataLoader(data, batch_size=128)
model = nn.Sequential(
    nn.Linear(512, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 10)
)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
print("compute job started", flush=True)
while True:
    for features, labels in loader:
        loss = nn.functional.cross_entropy(model(features), labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
