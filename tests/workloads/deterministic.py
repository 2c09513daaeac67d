"""A deterministic training job: fixed seed, a fixed number of epochs, its final loss exact.

`--until FILE` trains epoch after epoch until FILE exists (pausing a little between epochs, so
a test can inject into it many times while it trains), then prints how many epochs it ran;
`--epochs N` trains exactly N and prints the same lines. The pause changes no number: the same
epochs give the same loss, printed as `float.hex`, bit for bit.
"""

import argparse
import os
import time

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

parser = argparse.ArgumentParser()
parser.add_argument("--until")
parser.add_argument("--epochs", type=int)
args = parser.parse_args()

torch.manual_seed(0)
torch.set_num_threads(1)
data = TensorDataset(torch.randn(128, 32), torch.randint(0, 4, (128,)))
loader = DataLoader(data, batch_size=32, shuffle=True, generator=torch.Generator().manual_seed(1))
model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 4))
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
print("ready", flush=True)
epoch = 0
loss = torch.tensor(0.0)
while (args.epochs is not None and epoch < args.epochs) or (
    args.until is not None and not os.path.exists(args.until)
):
    for features, labels in loader:
        loss = nn.functional.cross_entropy(model(features), labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    epoch += 1
    if args.until is not None:
        time.sleep(0.05)
print(f"epochs {epoch} final loss {float(loss.item()).hex()}", flush=True)
