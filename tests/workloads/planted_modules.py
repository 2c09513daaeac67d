"""A training loop whose modules have planted costs: `Sleeps(20)` sleeps 20 ms in its forward,
`Sleeps(5)` 5 ms (inside a nested `Sequential`, beside a `Linear`).

Each `Sleeps` measures its own sleep (`perf_counter` around it) and notes whether the agent's
hooks were installed at the time: the job's own figure for the very calls the agent timed,
against which the agent's module timings are checked. At step `--request-at` the job asks for module
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


def global_hooks() -> int:
    return len(torch_module._global_forward_pre_hooks) + len(torch_module._global_forward_hooks)


class Sleeps(nn.Module):
    def __init__(self, ms: float) -> None:
        super().__init__()
        self.ms = ms
        self.slept_s: list[float] = []
        self.hooked: list[bool] = []

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.hooked.append(global_hooks() > 0)
        start_s = time.perf_counter()
        time.sleep(self.ms / 1000)
        self.slept_s.append(time.perf_counter() - start_s)
        return x

    def hooked_ms(self) -> list[float]:
        return [1000 * s for s, h in zip(self.slept_s, self.hooked, strict=True) if h]


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--request-at", type=int, default=3)
    parser.add_argument("--after", type=int, default=5)
    parser.add_argument("--max-steps", type=int, default=400)
    return parser.parse_args()


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
                "slow_ms": sum(slow.hooked_ms()) / max(len(slow.hooked_ms()), 1),
                "fast_ms": sum(fast.hooked_ms()) / max(len(fast.hooked_ms()), 1),
                "hooked_calls": len(slow.hooked_ms()),
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
