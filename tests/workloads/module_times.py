"""A CPU job traced with `with_stack=True` whose modules the job also times with hooks
(torch 2.13 writes no module events for `with_modules=True` alone on the CPU).

A 3-layer MLP (`Sequential` of `Linear`, `ReLU`, ...), big enough that each Linear takes
milliseconds. During the profiled steps, forward pre-hooks and hooks, and full backward
pre-hooks and hooks, time every module with `time.perf_counter`; the totals per module path
(`Sequential_0/Linear_0`, as the trace names them) are written to OUT_DIR/hooks.json, in ms
per step. Usage: python module_times.py OUT_DIR
"""

from __future__ import annotations

import json
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

import torch

STEPS = 3


def _paths(model: torch.nn.Module) -> dict[torch.nn.Module, str]:
    """Each module's path in the trace's words: class name, then its index among the modules
    of that class in the model (the profiler numbers them so)."""
    seen: dict[str, int] = defaultdict(int)
    names: dict[torch.nn.Module, str] = {}
    for module in model.modules():
        kind = type(module).__name__
        names[module] = f"{kind}_{seen[kind]}"
        seen[kind] += 1
    paths = {model: names[model]}
    for name, module in model.named_modules():
        if module is model:
            continue
        parent = model.get_submodule(name.rsplit(".", 1)[0]) if "." in name else model
        paths[module] = f"{paths[parent]}/{names[module]}"
    return paths


def _hook(model: torch.nn.Module, totals: dict[str, list[float]]) -> None:
    started: dict[tuple[str, str], float] = {}
    for module, path in _paths(model).items():

        def begin(kind: str, path: str = path) -> Callable[..., None]:
            def hook(*_: object) -> None:
                started[(path, kind)] = time.perf_counter()

            return hook

        def finish(kind: str, path: str = path) -> Callable[..., None]:
            def hook(*_: object) -> None:
                totals[path][0 if kind == "forward" else 1] += (
                    time.perf_counter() - started.pop((path, kind))
                ) * 1000

            return hook

        module.register_forward_pre_hook(begin("forward"))
        module.register_forward_hook(finish("forward"))
        module.register_full_backward_pre_hook(begin("backward"))
        module.register_full_backward_hook(finish("backward"))


def main(out_dir: str) -> None:
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = torch.nn.Sequential(
        torch.nn.Linear(1024, 2048),
        torch.nn.ReLU(),
        torch.nn.Linear(2048, 2048),
        torch.nn.ReLU(),
        torch.nn.Linear(2048, 256),
    )
    optimizer = torch.optim.SGD(model.parameters(), lr=0.001)
    batch = torch.randn(256, 1024, requires_grad=True)
    totals: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
    for _ in range(2):  # warm-up, untimed
        model(batch).square().mean().backward()
    _hook(model, totals)
    schedule = torch.profiler.schedule(wait=0, warmup=1, active=STEPS)
    with torch.profiler.profile(
        activities=[torch.profiler.ProfilerActivity.CPU],
        schedule=schedule,
        with_stack=True,
        on_trace_ready=torch.profiler.tensorboard_trace_handler(out_dir),
    ) as prof:
        for step in range(STEPS + 1):
            if step == 1:
                totals.clear()  # the warm-up step is not in the trace
            model(batch).square().mean().backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            prof.step()
    per_step = {p: [f / STEPS, b / STEPS] for p, (f, b) in totals.items()}
    (Path(out_dir) / "hooks.json").write_text(json.dumps(per_step, indent=1))


if __name__ == "__main__":
    main(sys.argv[1])
