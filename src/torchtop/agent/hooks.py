"""`attach()`: hook the agent into the job's torch, right after the job imported it.

Each hook is small and installed on its own, so one that a torch version does not support is
reported once (a `note`) while the others keep working:

- a global optimizer step post hook ends steps, and `Optimizer.__init__` says one exists;
- `torch.autograd.backward` (which `Tensor.backward` calls) ends steps in a loop without an
  optimizer: there is no global hook for "a backward pass finished" in torch (the hooks of
  `torch.autograd.graph` are per tensor or per node), and the wrapper costs one clock read and
  one comparison once a better signal marks the steps;
- `_BaseDataLoaderIter.__next__` is timed (data wait), tells which DataLoader is in use, and
  ends steps in a loop with neither;
- `torch.autocast.__enter__` and `torch.compile` are watched, to report AMP and compile use;
- `torch.autograd.profiler.profile._prepare_trace` is watched, so that a profiler the job starts
  itself closes the agent's window first instead of failing;
- argparse is watched (if the bootstrap has not already done it) for the script's options.

An exception raised through a wrapper leaves without the wrapper's frame in its traceback
(`agent.tracebacks`), so the job's errors point at its code and torch's, never at ours.

A process that multiprocessing started (a DataLoader worker, most often) holds its records
until it steps, so workers leave no files. `bye` is written by an `atexit` handler, with the exit
status that `sys.exit` or an uncaught exception set (`watch_exit_status`); no signal handler is
installed, so the job's own signal behaviour is untouched (the launcher sees how the job ended
by itself). A child killed by a signal cannot write its `bye`: its parent's agent writes it
(`agent.children`), so torchrun tells how each of its ranks ended.

Each installer returns its undo (`Undo`), or None where there is nothing to undo. `attach()`
never calls them: under `run` the hooks stay for the process's life. The injected agent
(`agent.injected`) installs a subset after the fact and undoes it on detach; `patch` makes an
undo that restores the original object, or, when someone wrapped the attribute over ours,
leaves ours in place as a pass-through (every hook asks the agent, which does nothing once it
is no longer active).
"""

from __future__ import annotations

import argparse
import atexit
import functools
import os
import sys
import time
from collections.abc import Callable
from typing import Any, NoReturn

import torch

from torchtop.agent import api, children, cli_options, overrides
from torchtop.agent.agent import Agent, open_sink
from torchtop.agent.config import read_config
from torchtop.agent.identity import read_identity, started_by_multiprocessing
from torchtop.agent.tracebacks import drop_own_frame

_agent: Agent | None = None

Undo = Callable[[], None]
_MISSING = object()


def patch(owner: Any, name: str, replacement: object) -> Undo:
    """Set `owner.name` to `replacement`; the undo puts back exactly what was there (an
    attribute the owner only inherited is deleted again), unless another wrapper now sits over
    ours, which is then left alone."""
    held = vars(owner).get(name, _MISSING) if hasattr(owner, "__dict__") else _MISSING
    setattr(owner, name, replacement)

    def undo() -> None:
        if getattr(owner, name, None) is not replacement:
            return
        if held is _MISSING:
            delattr(owner, name)
        else:
            setattr(owner, name, held)

    return undo


def attach() -> Agent | None:
    """Start the agent in this process (once); None when `TORCHTOP_RUN_DIR` is not set."""
    global _agent
    if _agent is not None:
        return _agent
    config, problems = read_config(os.environ)
    if config is None:
        return None
    identity = read_identity(os.environ)
    sink = open_sink(config.run_dir, identity.pid, hold_until_step=started_by_multiprocessing())
    agent = Agent(config, identity, sink)
    _agent = agent
    agent.start(torch.__version__, problems)
    for name, install in INSTALLERS:
        try:
            install(agent)  # under `run` the hooks are never undone
        except Exception as exc:
            agent.fail(name, exc)
    api.set_step_handler(agent.user_stepped)
    atexit.register(agent.close, "exit")
    os.register_at_fork(after_in_child=agent.forked)
    return agent


def watch_exit_status(agent: Agent) -> Undo:
    """Note how the interpreter is about to end, for `bye`: `sys.exit`'s code, or the uncaught
    exception's. Both wrappers pass everything on unchanged; a `raise SystemExit(n)` that
    bypasses `sys.exit` is written as 0 (not seen), as is a normal end."""
    original_exit = sys.exit
    original_hook = sys.excepthook

    def exit_noted(status: Any = None) -> NoReturn:
        try:
            agent.exit_requested(status)
        finally:
            original_exit(status)

    def hook_noted(kind: type[BaseException], value: BaseException, tb: Any) -> None:
        try:
            agent.exit_requested(value)
        finally:
            original_hook(kind, value, tb)

    undo_exit = patch(sys, "exit", exit_noted)
    undo_hook = patch(sys, "excepthook", hook_noted)

    def undo() -> None:
        undo_hook()
        undo_exit()

    return undo


def watch_child_exits(agent: Agent) -> None:
    """Write the `bye` of a child (a rank, where this is torchrun) that ended by a signal.
    Not in a process that holds its records (a DataLoader worker starts no ranks)."""
    if not agent.sink.holding:
        children.watch_children(agent.config.run_dir)


def watch_optimizers(agent: Agent) -> Undo:
    from torch.optim.optimizer import Optimizer, register_optimizer_step_post_hook

    def step_ended(optimizer: Any, args: Any, kwargs: Any) -> None:
        agent.optimizer_stepped(optimizer)

    handle = register_optimizer_step_post_hook(step_ended)
    original: Callable[..., None] = Optimizer.__init__

    @functools.wraps(original)
    def created(self: Any, *args: Any, **kwargs: Any) -> None:
        # Until it steps, backward() steps are provisional (gradient accumulation).
        agent.steps.optimizer_exists = True
        try:
            original(self, *args, **kwargs)
        except BaseException as exc:  # a bad argument: the job's own error, as torch says it
            drop_own_frame(exc)
            raise

    undo_created = patch(Optimizer, "__init__", created)

    def undo() -> None:
        undo_created()
        handle.remove()

    return undo


def time_backward(agent: Agent) -> Undo:
    autograd: Any = torch.autograd
    original: Callable[..., Any] = autograd.backward
    # Reentrant checkpointing calls backward inside backward (on the engine's threads too):
    # only the outermost call ends a step.
    running = [0]

    clock = time.perf_counter

    @functools.wraps(original)
    def backward(*args: Any, **kwargs: Any) -> Any:
        running[0] += 1
        started_s = clock()
        try:
            result = original(*args, **kwargs)
        except BaseException as exc:  # the job's error, without this frame in its traceback
            drop_own_frame(exc)
            raise
        finally:
            running[0] -= 1
        if not running[0]:
            # Under DDP, backward() returns once every rank's gradients are reduced: its
            # time holds the wait for the slowest rank (assess.ranks reads it).
            agent.backward_ended(clock() - started_s)
        return result

    return patch(autograd, "backward", backward)


def time_dataloaders(agent: Agent) -> Undo:
    from torch.utils.data.dataloader import _BaseDataLoaderIter

    original = _BaseDataLoaderIter.__next__
    clock = time.perf_counter
    # The stepping thread's own CPU time inside the call: with num_workers=0 it is the
    # loading's CPU work (decode, augment), the rest of the wait is storage or the network.
    cpu_clock = time.thread_time

    @functools.wraps(original)
    def timed_next(self: Any) -> Any:
        started_s, started_cpu_s = clock(), cpu_clock()
        arrived = False
        try:
            batch = original(self)
            arrived = True
            return batch
        except BaseException as exc:  # a dataset's error, or the epoch's StopIteration
            drop_own_frame(exc)
            raise
        finally:
            # StopIteration (the epoch's end) is a wait, not a batch: it ends no step.
            agent.data_waited(
                self, clock() - started_s, batch_arrived=arrived, cpu_s=cpu_clock() - started_cpu_s
            )

    # On the class: iterators that already exist look the method up there too.
    return patch(_BaseDataLoaderIter, "__next__", timed_next)


def watch_autocast(agent: Agent) -> Undo:
    autocast: Any = torch.amp.autocast_mode.autocast
    original: Callable[[Any], Any] = autocast.__enter__

    @functools.wraps(original)
    def enter(self: Any) -> Any:
        if getattr(self, "_enabled", True):
            agent.facts.amp = True
        try:
            return original(self)
        except BaseException as exc:
            drop_own_frame(exc)
            raise

    return patch(autocast, "__enter__", enter)


def watch_compile(agent: Agent) -> Undo:
    original: Callable[..., Any] = torch.compile

    @functools.wraps(original)
    def compile_watched(*args: Any, **kwargs: Any) -> Any:
        agent.facts.compiled = True
        try:
            return original(*args, **kwargs)
        except BaseException as exc:
            drop_own_frame(exc)
            raise

    return patch(torch, "compile", compile_watched)


def watch_job_profilers(agent: Agent) -> Undo:
    """A profiler the job starts while a window is open would fail: close the window first."""
    import torch.autograd.profiler as autograd_profiler

    profile_class: Any = autograd_profiler.profile
    original: Callable[..., Any] = profile_class._prepare_trace

    @functools.wraps(original)
    def prepare_trace(self: Any) -> Any:
        if not agent.opening_window and agent.window is not None:
            agent.discard_window("the job started its own profiler")
        return original(self)

    return patch(profile_class, "_prepare_trace", prepare_trace)


def watch_ddp(agent: Agent) -> Undo:
    """Keep the newest `DistributedDataParallel` and the user's line that built it: whether a
    bucket size can change anything depends on its gradients, and the fix goes on that line."""
    from torch.nn.parallel import DistributedDataParallel

    original: Callable[..., None] = DistributedDataParallel.__init__

    @functools.wraps(original)
    def init(self: Any, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        agent.facts.ddp = self
        agent.facts.ddp_where = caller_line(sys._getframe(1))

    return patch(DistributedDataParallel, "__init__", init)


def caller_line(frame: Any) -> str | None:
    """`file:line: source` of the first frame outside torch (a subclass's `super().__init__`
    leads back to the user's call), or None where there is none."""
    import linecache

    while frame is not None:
        file = frame.f_code.co_filename
        if not (f"{os.sep}torch{os.sep}" in file or f"{os.sep}torchtop{os.sep}" in file):
            text = linecache.getline(file, frame.f_lineno).strip()
            return f"{file}:{frame.f_lineno}" + (f": {text}" if text else "")
        frame = frame.f_back
    return None


def watch_cli_options(agent: Agent) -> None:
    cli_options.install(argparse)


def recover_cli_options(agent: Agent) -> None:
    """Injected after the script parsed its command line: its parsers, parsed again."""
    cli_options.recover()


Installer = Callable[[Agent], Undo | None]

INSTALLERS: list[tuple[str, Installer]] = [
    ("knob overrides", overrides.install),
    ("optimizer step hook", watch_optimizers),
    ("backward timing", time_backward),
    ("DataLoader timing", time_dataloaders),
    ("autocast watch", watch_autocast),
    ("torch.compile watch", watch_compile),
    ("DistributedDataParallel watch", watch_ddp),
    ("profiler guard", watch_job_profilers),
    ("argparse watch", watch_cli_options),
    ("exit status watch", watch_exit_status),
    ("child exit watch", watch_child_exits),
]
