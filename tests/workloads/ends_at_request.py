"""A short compute-bound job that ends the moment a profiler window is asked for.

It models a job whose last step comes right after `tune`'s measured steps: it checks the
run folder's window request (`RUN/requests/window`) each step and ends as soon as it exists,
before the agent (which looks for requests once a second) can answer. It ends by itself after
`MAX_S` seconds in any case.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import torch
from torch import nn

MAX_S = 20.0
request = Path(os.environ["TORCHTOP_RUN_DIR"]) / "requests" / "window"
torch.manual_seed(0)
torch.set_num_threads(1)
model = nn.Sequential(nn.Linear(512, 1024), nn.ReLU(), nn.Linear(1024, 10))
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
features, labels = torch.randn(128, 512), torch.randint(0, 10, (128,))
started = time.monotonic()
while not request.exists() and time.monotonic() - started < MAX_S:
    loss = nn.functional.cross_entropy(model(features), labels)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
print("short job done", flush=True)
