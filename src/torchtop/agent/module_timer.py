"""Live module timings: torch's global forward hooks, for a bounded number of steps.

The agent never holds the user's model, so it cannot hook one module: it uses torch's global
module hooks (`register_module_forward_pre_hook` / `register_module_forward_hook`, torch
1.13+), which fire for every `nn.Module` call, and so learns which modules run from the calls
themselves. They are installed at a step end, in the training thread (never from another
thread mid-forward), and removed at the step end `steps` steps later: the job then runs with no
hook at all. The post hook is registered `always_call`, so a forward that raises is timed too
and cannot leave its call open under the next module's.

What is measured, exactly: the wall time (`time.perf_counter`) from each module's forward pre
hook to its forward hook, on the thread that steps; a module's total includes the modules
called inside it, its self time does not (as the trace view counts them). On a CUDA job this
is host time: the time to launch the forward's kernels (plus any synchronisation inside it),
not the kernels' own time. Backward is not timed: torch's global backward hooks wrap each
module's inputs and outputs in an autograd function (`BackwardHook`), which changes the job's
graph (an in-place op on a module's output then raises), so they are not used.

Modules are named as the profiler names them (`nn.Module: Linear_0`): the class and an index
per class in the order first seen, with their path from the outermost module called
(`Sequential_0/Linear_1`), so a live tree and a trace's tree read alike.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from torch.nn.modules import module as torch_module

from torchtop.runs.records import ModuleTiming

Clock = Callable[[], float]


class _Call:
    """A module's forward in progress: the module, its path, when it began, and the time its
    children's forwards took so far."""

    __slots__ = ("children_s", "module", "path", "start_s")

    def __init__(self, module: object, path: str, start_s: float) -> None:
        self.module = module
        self.path = path
        self.start_s = start_s
        self.children_s = 0.0


class ModuleTimer:
    """Times every module's forward on the stepping thread from `install` to `remove`."""

    def __init__(self, thread: int | None, clock: Clock = time.perf_counter) -> None:
        self._thread = thread
        self._clock = clock
        self._stack: list[_Call] = []
        self._names: dict[int, tuple[object, str]] = {}
        self._per_class: dict[str, int] = {}
        self.totals: dict[str, list[float]] = {}
        """Path -> [calls, total seconds, self seconds], in the order first finished."""
        self._handles: list[Any] = []

    @property
    def installed(self) -> bool:
        return bool(self._handles)

    def install(self) -> None:
        self._handles = [
            torch_module.register_module_forward_pre_hook(self._began),
            torch_module.register_module_forward_hook(self._ended, always_call=True),
        ]

    def remove(self) -> None:
        handles, self._handles = self._handles, []
        for handle in handles:
            handle.remove()
        self._stack.clear()
        self._names.clear()

    def step_ended(self) -> None:
        """Forwards do not span a step end: anything left open (a forward that began before
        the hooks, under a step signal given inside it) goes."""
        self._stack.clear()

    def timings(self) -> list[ModuleTiming]:
        return [
            ModuleTiming(path=path, calls=int(calls), forward_s=total_s, forward_self_s=self_s)
            for path, (calls, total_s, self_s) in self.totals.items()
        ]

    def _began(self, module: object, args: object) -> None:
        if threading.get_ident() != self._thread:
            return
        named = self._names.get(id(module))
        if named is None or named[0] is not module:
            named = self._names[id(module)] = (module, self._new_name(module))
        stack = self._stack
        path = f"{stack[-1].path}/{named[1]}" if stack else named[1]
        stack.append(_Call(module, path, self._clock()))

    def _ended(self, module: object, args: object, output: object) -> None:
        if threading.get_ident() != self._thread:
            return
        end_s = self._clock()
        stack = self._stack
        at = len(stack) - 1
        while at >= 0 and stack[at].module is not module:
            at -= 1
        if at < 0:
            return  # its forward began before the hooks were installed
        call = stack[at]
        del stack[at:]
        took_s = end_s - call.start_s
        totals = self.totals.get(call.path)
        if totals is None:
            totals = self.totals[call.path] = [0, 0.0, 0.0]
        totals[0] += 1
        totals[1] += took_s
        totals[2] += took_s - call.children_s
        if stack:
            stack[-1].children_s += took_s

    def _new_name(self, module: object) -> str:
        kind = type(module).__name__
        index = self._per_class.get(kind, 0)
        self._per_class[kind] = index + 1
        return f"{kind}_{index}"
