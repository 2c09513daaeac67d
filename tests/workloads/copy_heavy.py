"""A job dominated by dtype and layout conversions of large tensors (the memcpy class)."""

import os

import torch
from torch import nn

torch.manual_seed(0)
model = nn.Linear(64, 10)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
images = torch.randint(0, 255, (16, 3, 224, 224), dtype=torch.uint8)
for _ in range(int(os.environ.get("STEPS", "30"))):
    x = images.to(torch.float32).to(torch.float64).to(torch.float32)
    x = x.permute(0, 2, 3, 1).contiguous().permute(0, 3, 1, 2).contiguous().clone()
    features = x.mean(dim=(2, 3)).repeat(1, 22)[:, :64]
    loss = model(features).sum()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
print("copy job done")
