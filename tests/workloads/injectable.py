"""A deterministic training job that runs `attach --inject`'s statement itself, at set steps.

Without gdb the tests still take the injection's own path: the test writes the one statement
the outside would deliver (`--statement-N`, a file), and at the start of step K the job runs it
as a pending call would, in `__main__`'s namespace. `--plan` says what happens when:
`{"K": ["exec", FILE] | ["exec-in-hook", FILE] | ["detach", RUN] | ["wait", SECONDS] |
["workers"]}` (`exec-in-hook` runs it inside the first of two global optimizer post hooks the
job registers then, where a pending call may well land); a detach touches
`RUN/inject/detach` (what the outside does when the attach ends) and waits for the agent's
`detached-<pid>.json`, running Python meanwhile, as a training job does.

It prints its own truth as JSON lines on stdout: each step's end (epoch s) and wall time, what
it saw of the agent in itself after each action (the patched attributes, the optimizer's global
hooks, its threads, whether a profiler records, the names in `__main__`), and the final loss,
exactly (`float.hex`).
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from pathlib import Path
from typing import Any

import torch
import torch.autograd.profiler as autograd_profiler
from torch import nn
from torch.optim.optimizer import (
    Optimizer,
    _global_optimizer_post_hooks,
    register_optimizer_step_post_hook,
)
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.dataloader import _BaseDataLoaderIter

import __main__


def patched_now() -> dict[str, object]:
    """The attributes the agent patches, as they are now."""
    return {
        "Optimizer.__init__": vars(Optimizer)["__init__"],
        "torch.autograd.backward": torch.autograd.backward,
        "_BaseDataLoaderIter.__next__": vars(_BaseDataLoaderIter)["__next__"],
        "autocast.__enter__": vars(torch.amp.autocast_mode.autocast)["__enter__"],
        "torch.compile": torch.compile,
        "profile._prepare_trace": vars(autograd_profiler.profile).get("_prepare_trace"),
        "sys.exit": sys.exit,
        "sys.excepthook": sys.excepthook,
    }


ORIGINAL = patched_now()
ORIGINAL_POST_HOOKS = list(_global_optimizer_post_hooks.items())


def say(**record: Any) -> None:
    print(json.dumps(record), flush=True)


def state(step: int, action: str) -> None:
    now = patched_now()
    say(
        kind="state",
        step=step,
        action=action,
        changed=sorted(name for name, value in now.items() if value is not ORIGINAL[name]),
        post_hooks_as_before=list(_global_optimizer_post_hooks.items()) == ORIGINAL_POST_HOOKS,
        post_hooks=len(_global_optimizer_post_hooks),
        post_hook_names=[h.__qualname__ for h in _global_optimizer_post_hooks.values()],
        threads=sorted(t.name for t in threading.enumerate() if t.name.startswith("torchtop")),
        profiling=bool(torch._C._autograd._profiler_enabled()),
        main_names=sorted(vars(__main__)),
    )


def act(step: int, action: list[str]) -> None:
    if action[0] == "exec":
        statement = Path(action[1]).read_text(encoding="utf-8")
        exec(statement, vars(__main__))  # what PyRun_SimpleString does with the pending call
    elif action[0] == "detach":
        inject = Path(action[1]) / "inject"
        (inject / "detach").touch()
        deadline = time.monotonic() + 10
        detached = inject / f"detached-{__import__('os').getpid()}.json"
        while not detached.exists() and time.monotonic() < deadline:
            sum(range(1000))  # Python keeps running, as the job would
            time.sleep(0.001)
        time.sleep(0.6)  # the thread's promised exit
    elif action[0] == "exec-in-hook":  # the safe point falls inside the optimizer's hook loop
        statement = Path(action[1]).read_text(encoding="utf-8")
        ran: list[bool] = []

        def first(optimizer: object, args: object, kwargs: object) -> None:
            if not ran:
                ran.append(True)
                exec(statement, vars(__main__))

        register_optimizer_step_post_hook(first)
        register_optimizer_step_post_hook(lambda optimizer, args, kwargs: None)
    elif action[0] == "workers":  # forked DataLoader workers inherit the agent
        side = TensorDataset(torch.arange(8.0))
        for _ in DataLoader(side, batch_size=2, num_workers=2, multiprocessing_context="fork"):
            pass
    elif action[0] == "wait":  # busy in Python, as a job between steps is
        deadline = time.monotonic() + float(action[1])
        while time.monotonic() < deadline:
            time.sleep(0.001)
    state(step, action[0])


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--width", type=int, default=1024)
    parser.add_argument("--plan", default="{}")
    args = parser.parse_args()
    plan = {int(k): v for k, v in json.loads(args.plan).items()}
    torch.manual_seed(0)
    torch.set_num_threads(1)
    data = TensorDataset(torch.randn(512, args.width), torch.randn(512, 1))
    loader = DataLoader(data, batch_size=64, shuffle=False)
    model = nn.Sequential(nn.Linear(args.width, args.width), nn.ReLU(), nn.Linear(args.width, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    batches = iter(loader)  # made before any injection: its class's method is what is hooked
    last_end_s = time.perf_counter()
    loss = torch.zeros(())
    for step in range(args.steps):
        if step in plan:
            act(step, plan[step])
        try:
            x, y = next(batches)
        except StopIteration:
            batches = iter(loader)
            x, y = next(batches)
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
        end_s = time.perf_counter()
        say(kind="step", step=step, end_t=time.time(), wall_s=end_s - last_end_s)
        last_end_s = end_s
    say(kind="loss", value=float(loss.item()).hex())
    return 0


if __name__ == "__main__":
    sys.exit(main())
