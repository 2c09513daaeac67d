"""A job whose steps are Python and operator dispatch: many tiny ops per step (the cpu class)."""

import os

import torch
from torch import nn

torch.manual_seed(0)
layers = nn.ModuleList(nn.Linear(8, 8) for _ in range(64))
optimizer = torch.optim.SGD(layers.parameters(), lr=0.01)
for _ in range(int(os.environ.get("STEPS", "40"))):
    x = torch.randn(4, 8)
    for layer in layers:
        x = torch.tanh(layer(x)) + 0.01 * x
        x = x * 1.0001
    loss = x.pow(2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
print("python-overhead job done")
