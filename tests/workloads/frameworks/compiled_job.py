"""A `torch.compile`d model trained on data in memory: its first steps compile, the rest compute.

The job times its own steps and prints the first step's wall time (the compile) and the median
of the others, so a test can tell whether the compile leaked into torchtop's step figures.
"""

from __future__ import annotations

import statistics
import sys
import time

import torch
from torch import nn

torch.manual_seed(0)
torch.set_num_threads(1)
steps = int(sys.argv[1]) if len(sys.argv) > 1 else 30
net = nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 10))
model = torch.compile(net)
optimizer = torch.optim.SGD(net.parameters(), lr=0.01)
features, labels = torch.randn(64, 256), torch.randint(0, 10, (64,))
walls_ms = []
for _ in range(steps):
    started = time.perf_counter()
    loss = nn.functional.cross_entropy(model(features), labels)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    walls_ms.append((time.perf_counter() - started) * 1000)
print(f"first step ms {walls_ms[0]:.1f}", flush=True)
print(f"later median ms {statistics.median(walls_ms[2:]):.2f}", flush=True)
print(f"optimizer steps {steps}", flush=True)
