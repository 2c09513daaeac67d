"""A job whose steps are all math: a wide MLP on data already in memory (the cpu class)."""

import os

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
data = TensorDataset(torch.randn(4096, 1024), torch.randint(0, 10, (4096,)))
loader = DataLoader(data, batch_size=128)
model = nn.Sequential(
    nn.Linear(1024, 2048), nn.ReLU(), nn.Linear(2048, 2048), nn.ReLU(), nn.Linear(2048, 10)
)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
for _ in range(int(os.environ.get("EPOCHS", "1"))):
    for features, labels in loader:
        loss = nn.functional.cross_entropy(model(features), labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
print("compute job done")
