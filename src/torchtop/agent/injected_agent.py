"""`InjectedAgent`: the agent `attach --inject` loads into a job that is already running.

It is `run`'s `Agent` with what an agent that arrives late and leaves early needs:

- the hooks are installed after the fact (`INJECTED_INSTALLERS`, a subset of `run`'s: not
  argparse, which has parsed already, nor the child exit watcher), each with its undo;
- one lock between the job's thread (step ends) and the agent's own thread (chores while the
  job is idle, detach): `run`'s agent has only the job's threads and needs none;
- `finish()` undoes every hook in reverse order, drops an open profiler window and writes
  `bye` with reason "detached". It runs on the main thread for two reasons: a profiler window
  can only be stopped there, and the optimizer's global post hooks are an OrderedDict that
  torch iterates while it calls them, so adding or removing ours while the main thread is in
  that loop raises "OrderedDict mutated during iteration" in the job (seen: a job with two
  global post hooks of its own, injected through gdb). `post_hooks_running` tells that moment
  (a frame of torch's step wrapper that has bound `out`). Such work waits in `main_work`, done
  at the job's next `backward()` or batch (our own hooks, called outside that loop) or when a
  pending call (`main_thread.call_soon`, at most one every `KICK_EVERY_S`) finds the main
  thread outside it: a busy retry would land in the loop again and again, slowing the job.
"""

from __future__ import annotations

import functools
import sys
import threading
import time
from collections.abc import Callable
from types import CodeType, FrameType
from typing import Any

from torchtop.agent import api, main_thread
from torchtop.agent.agent import Agent
from torchtop.agent.hooks import (
    INSTALLERS,
    Installer,
    Undo,
    recover_cli_options,
    watch_optimizers,
)
from torchtop.agent.step_clock import EndedStep
from torchtop.runs.journal import write_once
from torchtop.runs.layout import RunLayout
from torchtop.runs.records import Bye

THREAD_NAME = "torchtop-inject"
# While work waits for the main thread, a pending call asks for it this often (not more: one
# that lands in the optimizer's hook loop does nothing, and each costs the job a little).
KICK_EVERY_S = 0.05

RUN_ONLY = (
    "knob overrides",
    "argparse watch",
    "child exit watch",
    "DistributedDataParallel watch",
)
"""`run`'s installers that have no after-the-fact form: knob overrides apply at start-up,
argparse has parsed already (its options are recovered from the parsers left in memory), the
child exit watcher belongs to a launcher, and a running job built its `DistributedDataParallel`
long before."""
INJECTED_INSTALLERS: list[tuple[str, Installer]] = [
    *((name, install) for name, install in INSTALLERS if name not in RUN_ONLY),
    ("argparse recovery", recover_cli_options),
]


def _step_wrapper_code() -> CodeType | None:
    """The code of torch's `Optimizer.profile_hook_step` wrapper (one code, many closures)."""
    try:
        from torch.optim.optimizer import Optimizer

        code: CodeType = Optimizer.profile_hook_step(lambda *a, **k: None).__code__
        return code
    except Exception:
        return None


_WRAPPER_CODE = _step_wrapper_code()


def post_hooks_running(frame: FrameType | None) -> bool:
    """Whether this stack is inside an optimizer step past its body: the post hook loop.

    Without torch's wrapper to compare with, any step counts (the caller waits a little)."""
    wrapper = _WRAPPER_CODE
    while frame is not None:
        code = frame.f_code
        if wrapper is None and code.co_name == "wrapper" and "optimizer" in code.co_filename:
            return True
        if code is wrapper and ("out" in frame.f_locals or "out" not in code.co_varnames):
            return True
        frame = frame.f_back
    return False


class InjectedAgent(Agent):
    def __init__(self, *args: Any, number: int, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.number = number
        self.lock = threading.RLock()
        self.undos: list[tuple[str, Undo]] = []
        self.hooks_removed: list[str] = []
        self.finished = threading.Event()
        self.stopping = threading.Event()
        self.thread: threading.Thread | None = None
        self.main_work: list[Callable[[], None]] = []
        self._kicked = False

    def install(self, optimizer_hook_now: bool = True) -> None:
        """The hooks, each on its own: one that fails is a note and the others still go in.
        Inside the optimizer's hook loop, its hook waits for the main thread's next safe point."""
        for name, install in INJECTED_INSTALLERS:
            if install is watch_optimizers and not optimizer_hook_now:
                self.main_work.append(functools.partial(self._install, name, install))
            else:
                self._install(name, install)
        api.set_step_handler(self.user_stepped)

    def _install(self, name: str, install: Installer) -> None:
        if not self.active:
            return
        try:
            undo = install(self)
        except Exception as exc:
            self.fail(name, exc)
            return
        if undo is not None:
            self.undos.append((name, undo))

    # Work for the main thread: done at the next backward() or batch (our own hooks, which
    # the job calls outside the optimizer's hook loop), or when a kick's pending call finds
    # the main thread outside that loop.

    def backward_ended(self, seconds: float | None = None) -> None:
        if self.main_work:
            self.run_main_work()
        super().backward_ended(seconds)

    def data_waited(
        self,
        iterator: object,
        seconds: float,
        batch_arrived: bool = False,
        cpu_s: float | None = None,
    ) -> None:
        if self.main_work:
            self.run_main_work()
        super().data_waited(iterator, seconds, batch_arrived, cpu_s)

    def run_main_work(self) -> None:
        self._kicked = False
        if threading.get_ident() != threading.main_thread().ident:
            return
        if post_hooks_running(sys._getframe(1)):
            return
        while self.main_work:
            work = self.main_work.pop(0)
            try:
                work()
            except Exception as exc:
                self.fail("main thread work", exc)

    def kick(self) -> None:
        """From the agent's thread: one pending call at a time asks the main thread to work."""
        if self._kicked or not self.main_work:
            return
        self._kicked = True
        if main_thread.call_soon(self.run_main_work):
            return
        self._kicked = False
        # No pending calls here: work from this thread when the main one is not in the loop.
        main = sys._current_frames().get(threading.main_thread().ident or 0)
        if not post_hooks_running(main):
            while self.main_work:
                self.main_work.pop(0)()

    # The job's thread and the agent's own one share the records.

    def _step_ended(self, records: list[EndedStep], now_s: float) -> None:
        with self.lock:
            if self.active:
                super()._step_ended(records, now_s)

    def note(self, message: str, key: str | None = None) -> None:
        with self.lock:
            super().note(message, key)

    def idle_chores(self) -> None:
        """From the agent's thread: a window request or new settings while no step ends."""
        self.kick()
        with self.lock:
            now_s = time.perf_counter()
            if self.active and (self._chores_s is None or now_s - self._chores_s >= 1.0):
                try:
                    self._chores(now_s)
                except Exception as exc:
                    self.fail("chores", exc)

    def close(self, reason: str = "exit") -> None:
        with self.lock:
            super().close(reason)

    # Detach.

    def detach_from_thread(self, wait_s: float) -> None:
        """Stop at once (the hooks do nothing from now) and have the main thread undo them;
        wait up to `wait_s` for it. A main thread that is away (in C, in the optimizer's hook
        loop) does it later, at its next safe point: the hooks are still there to call it."""
        with self.lock:
            self.active = False
            self.main_work[:] = [self.finish]  # an optimizer hook not yet in stays out
        deadline_s = time.monotonic() + wait_s
        while not self.finished.is_set() and time.monotonic() < deadline_s:
            self.kick()
            self.finished.wait(KICK_EVERY_S)

    def finish(self) -> None:
        """Undo every hook (reverse order), drop a window, write `bye` (reason "detached")."""
        with self.lock:
            if self.finished.is_set():
                return
            self.active = False
            self.main_work.clear()
            if api._handler == self.user_stepped:
                api.set_step_handler(None)
            for name, undo in reversed(self.undos):
                try:
                    undo()
                    self.hooks_removed.append(name)
                except Exception as exc:
                    self.fail(f"removing the {name}", exc)
            self.undos = []
            self._say_bye()
            self._say_detached()
            self.finished.set()

    def _say_detached(self) -> None:
        detached = {
            "pid": self.identity.pid,
            "number": self.number,
            "hooks_removed": self.hooks_removed,
            # The thread returns as soon as it sees this finish (or was told to stop).
            "threads_stopped": [THREAD_NAME],
            "at": time.time(),
        }
        try:
            write_once(RunLayout(self.config.run_dir).inject_detached(self.identity.pid), detached)
        except Exception as exc:
            self.fail("detached record", exc)

    def _say_bye(self) -> None:
        if self.sink.closed:
            return
        try:
            self._release_held()
            self.discard_window("the attach ended while it was open")
            self.end_modules()  # its hooks go with the others'
            self.write_settings_if_changed()
            self.sink.write(Bye(t=time.time(), reason="detached"))
            self.sink.close()
        except Exception:  # no one is left to tell; keep the job clean
            return
