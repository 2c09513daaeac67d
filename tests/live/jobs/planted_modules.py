"""A training loop whose modules have planted costs: `Sleeps(20)` sleeps 20 ms in its forward,
`Sleeps(5)` 5 ms (inside a nested `Sequential`, beside a `Linear`).

Each `Sleeps` measures its own sleep (`perf_counter` around it): the job's own figure, against
which the agent's module timings are checked. At step `--request-at` the job asks for module
timings the way the dashboard's `m` does (touching `RUN/requests/modules`), then runs until the
agent's hooks have come and gone (plus `--after` steps), and prints, as its last line, a JSON
object: its own mean sleeps, whether it saw the hooks installed, and the hooks left at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import torch
from torch import nn
from torch.nn.modules import module as torch_module


class Sleeps(nn.Module):
    def __init__(self, ms: float) -> None:
        super().__init__()
        self.ms = ms
        self.slept_s: list[float] = []

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        start_s = time.perf_counter()
        time.sleep(self.ms / 1000)
        self.slept_s.append(time.perf_counter() - start_s)
        return x


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--request-at", type=int, default=3)
    parser.add_argument("--after", type=int, default=5)
    parser.add_argument("--max-steps", type=int, default=400)
    return parser.parse_args()


def global_hooks() -> int:
    return len(torch_module._global_forward_pre_hooks) + len(torch_module._global_forward_hooks)


def main() -> int:
    args = parse_args()
    torch.manual_seed(0)
    slow, fast = Sleeps(20), Sleeps(5)
    model = nn.Sequential(slow, nn.Sequential(fast, nn.Linear(16, 16)))
    loss_fn = nn.MSELoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(8, 16), torch.randn(8, 16)
    seen_hooks, left = False, -1
    for index in range(args.max_steps):
        if index == args.request_at:
            request = Path(os.environ["TORCHTOP_RUN_DIR"]) / "requests" / "modules"
            request.parent.mkdir(parents=True, exist_ok=True)
            request.touch()
        optimizer.zero_grad()
        loss_fn(model(x), y).backward()
        optimizer.step()
        seen_hooks = seen_hooks or global_hooks() > 0
        if seen_hooks and global_hooks() == 0:
            left = args.after if left < 0 else left - 1
            if left == 0:
                break
    own_hooks = sum(len(m._forward_hooks) + len(m._forward_pre_hooks) for m in model.modules())
    print(
        json.dumps(
            {
                "slow_ms": 1000 * sum(slow.slept_s) / len(slow.slept_s),
                "fast_ms": 1000 * sum(fast.slept_s) / len(fast.slept_s),
                "saw_hooks": seen_hooks,
                "global_hooks_after": global_hooks(),
                "module_hooks_after": own_hooks,
                "steps": index + 1,
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
