"""A compute-bound job (the cpu class) that turns copy-heavy for its last profiler window only.

It counts the profiler windows the agent has saved (their trace files in the run folder):
once `NORMAL_WINDOWS` exist, every step also converts a large image batch between dtypes and
layouts (the memcpy class), and after the next window is saved it stops. The agent saves a
window inside the step end that closes it, so the switch always falls between two windows:
the newest window is all burst, every earlier one all math.
"""

import os
from pathlib import Path

import torch
from torch import nn

NORMAL_WINDOWS = int(os.environ.get("NORMAL_WINDOWS", "8"))
MAX_STEPS = 2000
run_dir = Path(os.environ["TORCHTOP_RUN_DIR"])
torch.manual_seed(0)
torch.set_num_threads(1)
model = nn.Sequential(nn.Linear(512, 1024), nn.ReLU(), nn.Linear(1024, 10))
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
features, labels = torch.randn(128, 512), torch.randint(0, 10, (128,))
images = torch.randint(0, 255, (6, 3, 224, 224), dtype=torch.uint8)


def windows_saved() -> int:
    return sum(1 for _ in run_dir.rglob("*.pt.trace.json.gz"))


steps = 0
while steps < MAX_STEPS:
    steps += 1
    saved = windows_saved()
    if saved > NORMAL_WINDOWS:
        break
    if saved == NORMAL_WINDOWS:
        x = images.to(torch.float32).to(torch.float64).to(torch.float32)
        x = x.permute(0, 2, 3, 1).contiguous().clone()
    loss = nn.functional.cross_entropy(model(features), labels)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
print(f"copy burst job done after {steps} steps, {windows_saved()} windows")
