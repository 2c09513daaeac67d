"""Knob overrides: the agent changes library defaults inside a relaunched job.

`torchtop tune` (and an accepted fix in the dashboard) relaunches a job with
`TORCHTOP_OVERRIDES={"dataloader.num_workers": 8, ...}`; when the job imports torch the agent
calls `install()`, which applies each knob it knows:

- DataLoader `num_workers`, `pin_memory`, `persistent_workers`, `prefetch_factor`: the given
  values replace the job's own at each `DataLoader(...)` (the last two only with workers;
  `num_workers` is left alone for an IterableDataset, which workers would each read whole);
- `torch.num_threads`, `torch.float32_matmul_precision`: set now, and a later call by the job
  with another value is replaced by the override (in this process only, so DataLoader workers
  still set their own single thread);
- `torch.backends.cudnn.benchmark`, `torch.backends.cuda.matmul.allow_tf32`: set now and again
  at the first optimizer step, after the job's own set-up;
- `optimizer.foreach`, `optimizer.zero_grad_set_to_none`: every optimizer's.

Each override that takes effect is said once, as a `note` in the agent's journal and on the
job's stderr as `[torchtop] override: DataLoader(num_workers=0 -> 8)`, so the user sees in the
job's own output what torchtop changed. Stdlib at import time: the relauncher imports this
module for `OVERRIDES_ENV` without importing torch.
"""

from __future__ import annotations

import functools
import inspect
import json
import os
import sys
from collections.abc import Callable, Mapping
from typing import Any, Protocol

OVERRIDES_ENV = "TORCHTOP_OVERRIDES"


class Reporter(Protocol):
    """Where an override's notes and failures go: the agent's journal (kept a protocol so the
    agent imports this module and nothing here imports the agent)."""

    def note(self, message: str, key: str | None = None) -> None: ...

    def fail(self, where: str, exc: BaseException, stop: bool = False) -> None: ...


LOADER_KNOBS = {
    "dataloader.num_workers": "num_workers",
    "dataloader.pin_memory": "pin_memory",
    "dataloader.persistent_workers": "persistent_workers",
    "dataloader.prefetch_factor": "prefetch_factor",
}
_WORKER_ONLY = ("persistent_workers", "prefetch_factor")

_applied: dict[str, Any] = {}


def applied() -> dict[str, Any]:
    """knob -> value for each override that took effect in this process (for `settings`)."""
    return dict(_applied)


def requested(env: Mapping[str, str]) -> tuple[dict[str, Any], list[str]]:
    """The overrides asked for, and complaints about the variable."""
    text = env.get(OVERRIDES_ENV, "").strip()
    if not text:
        return {}, []
    try:
        wanted = json.loads(text)
    except ValueError:
        return {}, [f"{OVERRIDES_ENV} is not JSON; no overrides applied"]
    if not isinstance(wanted, dict):
        return {}, [f"{OVERRIDES_ENV} is not a JSON object; no overrides applied"]
    return wanted, []


class Announcer:
    """Says each override once: a note in the journal and a line on the job's stderr."""

    def __init__(self, agent: Reporter) -> None:
        self.agent = agent
        self.said: set[str] = set()
        self.pid = os.getpid()

    def say(self, knob: str, value: object, message: str) -> None:
        if os.getpid() != self.pid:
            return
        _applied[knob] = value
        if message in self.said:
            return
        self.said.add(message)
        self.agent.note(message, key=message)
        rank = os.environ.get("RANK")
        prefix = f"[torchtop] rank {rank}: " if rank is not None else "[torchtop] "
        try:
            print(prefix + message, file=sys.stderr, flush=True)
        except (OSError, ValueError):  # the job closed its stderr: the journal still has it
            return


def install(agent: Reporter) -> None:
    """Apply the overrides in `TORCHTOP_OVERRIDES` (called by the agent once torch is imported)."""
    wanted, problems = requested(os.environ)
    for problem in problems:
        agent.note(problem)
    announcer = Announcer(agent)
    loader = {LOADER_KNOBS[k]: v for k, v in wanted.items() if k in LOADER_KNOBS}
    if loader:
        override_dataloader(loader, announcer)
    for knob, value in wanted.items():
        if knob in LOADER_KNOBS:
            continue
        apply = _APPLIERS.get(knob)
        if apply is None:
            agent.note(f"override of {knob} is not supported by this agent; ignored")
            continue
        try:
            apply(value, announcer)
        except Exception as exc:
            agent.fail(f"override {knob}", exc)


def override_dataloader(loader: dict[str, Any], announcer: Announcer) -> None:
    from torch.utils.data import DataLoader, IterableDataset

    original = DataLoader.__init__
    signature = inspect.signature(original)

    @functools.wraps(original)
    def init(self: Any, *args: Any, **kwargs: Any) -> None:
        try:
            bound = signature.bind(self, *args, **kwargs)
        except TypeError:  # the job's own mistake: let DataLoader report it
            original(self, *args, **kwargs)
            return
        bound.apply_defaults()
        try:
            iterable = isinstance(bound.arguments.get("dataset"), IterableDataset)
            changes = _loader_changes(bound.arguments, loader, iterable)
        except Exception:  # an override must never break the job: it runs as written
            changes = {}
        bound.arguments.update({name: new for name, (_, new) in changes.items()})
        original(*bound.args, **bound.kwargs)
        if changes:
            text = ", ".join(f"{n}={old!r} -> {new!r}" for n, (old, new) in changes.items())
            for name, (_, new) in changes.items():
                announcer.say(f"dataloader.{name}", new, f"override: DataLoader({text})")

    DataLoader.__init__ = init  # type: ignore[method-assign]


def _loader_changes(
    arguments: Mapping[str, Any], loader: Mapping[str, Any], iterable: bool
) -> dict[str, tuple[Any, Any]]:
    wanted = dict(loader)
    if iterable:
        wanted.pop("num_workers", None)
    workers = wanted.get("num_workers", arguments.get("num_workers", 0))
    if not workers:
        for name in _WORKER_ONLY:
            wanted.pop(name, None)
    return {
        name: (arguments.get(name), value)
        for name, value in wanted.items()
        if name in arguments and arguments.get(name) != value
    }


def _replace_setter(module: Any, name: str, value: object, knob: str, announcer: Announcer) -> None:
    """Call `module.name(value)` now; later calls with another value get `value` instead."""
    original: Callable[[Any], None] = getattr(module, name)
    original(value)
    announcer.say(knob, value, f"override: {module.__name__}.{name}({value!r})")

    @functools.wraps(original)
    def setter(requested_value: Any) -> None:
        if os.getpid() == announcer.pid and requested_value != value:
            announcer.say(
                knob, value, f"override: {name}({requested_value!r} -> {value!r}) by torchtop"
            )
            requested_value = value
        original(requested_value)

    setattr(module, name, setter)


def set_num_threads(value: object, announcer: Announcer) -> None:
    import torch

    _replace_setter(torch, "set_num_threads", int(str(value)), "torch.num_threads", announcer)


def set_matmul_precision(value: object, announcer: Announcer) -> None:
    import torch

    knob = "torch.float32_matmul_precision"
    _replace_setter(torch, "set_float32_matmul_precision", str(value), knob, announcer)


Applier = Callable[[object, "Announcer"], None]


def _flag_setter(holder_path: str, attribute: str, knob: str) -> Applier:
    """An override of a flag such as `torch.backends.cudnn.benchmark`: now and at step one."""

    def apply(value: object, announcer: Announcer) -> None:
        import importlib

        from torch.optim.optimizer import register_optimizer_step_post_hook

        holder = importlib.import_module(holder_path)
        for part in attribute.split(".")[:-1]:
            holder = getattr(holder, part)
        name = attribute.rsplit(".", 1)[-1]
        flag = bool(value)

        def set_flag() -> None:
            old = getattr(holder, name)
            setattr(holder, name, flag)
            announcer.say(knob, flag, f"override: {knob}({old!r} -> {flag!r})")

        set_flag()
        done = False

        def first_step(optimizer: Any, args: Any, kwargs: Any) -> None:
            # Removing a hook while torch iterates over the hooks would break the job's step,
            # so after the first step this hook only returns.
            nonlocal done
            if not done:
                done = True
                if getattr(holder, name) != flag:
                    set_flag()

        register_optimizer_step_post_hook(first_step)

    return apply


def set_foreach(value: object, announcer: Announcer) -> None:
    from torch.optim import Optimizer

    original = Optimizer.__init__
    flag = bool(value)

    @functools.wraps(original)
    def init(self: Any, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        defaults = getattr(self, "defaults", None)
        if not isinstance(defaults, dict) or "foreach" not in defaults:
            return
        old = defaults["foreach"]
        if old != flag:
            defaults["foreach"] = flag
            for group in self.param_groups:
                group["foreach"] = flag
            message = f"override: {type(self).__name__}(foreach={old!r} -> {flag!r})"
            announcer.say("optimizer.foreach", flag, message)

    Optimizer.__init__ = init  # type: ignore[method-assign]


def set_zero_grad_to_none(value: object, announcer: Announcer) -> None:
    from torch.optim import Optimizer

    original = Optimizer.zero_grad
    flag = bool(value)

    @functools.wraps(original)
    def zero_grad(self: Any, set_to_none: bool = True) -> None:
        if set_to_none != flag:
            message = f"override: zero_grad(set_to_none={set_to_none!r} -> {flag!r})"
            announcer.say("optimizer.zero_grad_set_to_none", flag, message)
        original(self, set_to_none=flag)

    Optimizer.zero_grad = zero_grad  # type: ignore[method-assign]


_APPLIERS: dict[str, Applier] = {
    "torch.num_threads": set_num_threads,
    "torch.float32_matmul_precision": set_matmul_precision,
    "torch.backends.cudnn.benchmark": _flag_setter(
        "torch.backends", "cudnn.benchmark", "torch.backends.cudnn.benchmark"
    ),
    "torch.backends.cuda.matmul.allow_tf32": _flag_setter(
        "torch.backends", "cuda.matmul.allow_tf32", "torch.backends.cuda.matmul.allow_tf32"
    ),
    "optimizer.foreach": set_foreach,
    "optimizer.zero_grad_set_to_none": set_zero_grad_to_none,
}
