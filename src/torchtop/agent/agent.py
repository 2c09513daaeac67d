"""The agent's state and what it does at each step end, DataLoader wait and exit.

The hooks (`hooks.py`) call four methods on hot paths: `data_waited` (each DataLoader
`__next__`), `backward_ended` (each `torch.autograd.backward`), `optimizer_stepped` (each
optimizer step) and `user_stepped` (`torchtop.step()`); `StepClock` decides which of them
marks the steps.
They do a few additions and, at most once a second, the slower chores: look for a window
request, rebuild the settings and write them if they changed. Profiler windows open and close
at step ends. Whatever goes wrong in here is written once as a `note` and switches the failing
part off; it never reaches the job.

A process forked from the job (a DataLoader worker, most often) inherits the agent; there it
starts over under its own pid and holds its records until it steps, so workers write nothing.
"""

from __future__ import annotations

import dataclasses
import os
import sys
import threading
import time
import traceback
from pathlib import Path

import msgspec

from torchtop.agent import overrides
from torchtop.agent.cli_options import seen_options
from torchtop.agent.config import AgentConfig
from torchtop.agent.identity import Identity, hello_record
from torchtop.agent.memory_probe import MemoryProbe
from torchtop.agent.module_period import ModulePeriod
from torchtop.agent.profiler_window import ProfilerWindow, job_profiler_active
from torchtop.agent.settings import JobFacts, device_in_use, loader_settings, settings_record
from torchtop.agent.sink import RecordSink
from torchtop.agent.step_clock import BACKWARD, DATALOADER, EndedStep, StepClock
from torchtop.agent.window_plan import RequestWatcher, WindowPlan
from torchtop.runs.journal import JournalWriter
from torchtop.runs.layout import RunLayout
from torchtop.runs.records import Bye, Note, Settings, Step, Window

CHORES_EVERY_S = 1.0
ERROR_LINES = 20
"""The last lines of an uncaught exception's traceback that `bye` keeps."""
LOADER_SETTINGS_ATTR = "_torchtop_loader_settings"


def open_sink(run_dir: Path, pid: int, hold_until_step: bool) -> RecordSink:
    """The sink of `events/agent-<pid>.jsonl`; the file is created at the first write."""
    path = RunLayout(run_dir).agent_events(pid)
    return RecordSink(lambda: JournalWriter(path), hold_until_step=hold_until_step)


def error_lines(exc: BaseException) -> list[str] | None:
    """`exc` as Python prints it uncaught, its last `ERROR_LINES` lines; None if that fails."""
    try:
        text = "".join(traceback.format_exception(exc))
    except Exception:  # a broken __str__: the exit status still says it failed
        return None
    return [line for line in text.splitlines() if line.strip()][-ERROR_LINES:]


def group_rank() -> tuple[int, int] | None:
    """The rank and world size of the job's default process group; None before it is up (or
    where the job never imported torch.distributed)."""
    dist = sys.modules.get("torch.distributed")
    if dist is None or not dist.is_available() or not dist.is_initialized():
        return None
    return int(dist.get_rank()), int(dist.get_world_size())


class Agent:
    def __init__(self, config: AgentConfig, identity: Identity, sink: RecordSink) -> None:
        self.config = config
        self.identity = identity
        self.sink = sink
        self.active = True
        self.facts = JobFacts()
        self.steps = StepClock()
        self.plan = WindowPlan(config.window_every_s, config.window_first_step)
        layout = RunLayout(config.run_dir)
        self.requests = RequestWatcher(layout.window_request, time.time_ns())
        self.module_requests = RequestWatcher(layout.modules_request, time.time_ns())
        self.modules_requested = False
        self.modules: ModulePeriod | None = None
        self._modules_broken = False
        self.window: ProfilerWindow | None = None
        self.opening_window = False
        self._settings: Settings | None = None
        self._settings_broken = False
        self._loader_broken = False
        self._chores_s: float | None = None
        self._step_thread = threading.main_thread().ident
        self._torch_version = ""
        self._exit_code = 0
        self._exit_signal: str | None = None
        self._error: list[str] | None = None
        self._hello_t = 0.0
        self._group_told = False
        """The process group's rank was read (or there is none to read, for good)."""
        self.memory = MemoryProbe()

    def start(self, torch_version: str, problems: list[str]) -> None:
        self._torch_version = torch_version
        self._hello_t = time.time()
        self.sink.write(hello_record(self.identity, torch_version, self._hello_t))
        for problem in problems:
            self.note(problem)

    # Hot paths: called by the hooks on every DataLoader batch and every step.

    def data_waited(
        self,
        iterator: object,
        seconds: float,
        batch_arrived: bool = False,
        cpu_s: float | None = None,
    ) -> None:
        if not self.active or threading.get_ident() != self._step_thread:
            return
        self.steps.add_data_wait(seconds, cpu_s)
        if batch_arrived and self.steps.accepts(DATALOADER):
            self._signalled(DATALOADER)
        if self._loader_broken:
            return
        try:
            settings = getattr(iterator, LOADER_SETTINGS_ATTR, None)
            if settings is None:
                settings = loader_settings(iterator)
                setattr(iterator, LOADER_SETTINGS_ATTR, settings)
            self.facts.loader = settings
        except Exception as exc:
            self._loader_broken = True
            self.fail("DataLoader settings", exc)

    def backward_ended(self, seconds: float | None = None) -> None:
        if not self.active:
            return
        if seconds is not None and threading.get_ident() == self._step_thread:
            self.steps.add_backward(seconds)
        if self.steps.accepts(BACKWARD):
            self._signalled(BACKWARD)

    def _signalled(self, level: int) -> None:
        """A lower signal than the optimizer's: called from inside the job's backward() or
        DataLoader, so nothing may escape to the job."""
        now_s = time.perf_counter()
        try:
            records = self.steps.signalled(level, now_s)
        except Exception as exc:
            self.fail("step timing", exc, stop=True)
            return
        self._step_ended(records, now_s)

    def optimizer_stepped(self, optimizer: object) -> None:
        if self.active:
            now_s = time.perf_counter()
            self._step_ended(self.steps.optimizer_stepped(id(optimizer), now_s), now_s)

    def user_stepped(self) -> None:
        if self.active:
            now_s = time.perf_counter()
            self._step_ended(self.steps.user_stepped(now_s), now_s)

    def _step_ended(self, records: list[EndedStep], now_s: float) -> None:
        if not records:
            if self.steps.pending and self.facts.step_signal_held != self.steps.held:
                self._say_held()
            return
        try:
            self._step_thread = threading.get_ident()
            self._write_steps(records, now_s)
            signals = (self.steps.signal, self.steps.held)
            signal_changed = (self.facts.step_signal, self.facts.step_signal_held) != signals
            self.facts.step_signal, self.facts.step_signal_held = signals
            if signal_changed or self._chores_s is None or now_s - self._chores_s >= CHORES_EVERY_S:
                self._chores(now_s)
        except Exception as exc:
            self.fail("step timing", exc, stop=True)
            return
        self._advance_window(now_s)
        self._advance_modules(records)

    def _say_held(self) -> None:
        """Said at once, so the live view can explain a job whose steps are all held back.

        The last settings with the held signal, not new ones: building them asks the job's
        torch for its thread counts, which is the chores' business, not the hot path's."""
        self.facts.step_signal_held = self.steps.held
        try:
            said = msgspec.structs.replace(
                self._settings or Settings(), step_signal_held=self.steps.held, t=time.time()
            )
            self.sink.write(said)
        except Exception as exc:
            self.fail("settings", exc)

    def _write_steps(self, records: list[EndedStep], now_s: float) -> None:
        now_t = time.time()
        # Memory is read now: it belongs to the step ending now, not to ones released late.
        memory = self.memory.read(now_s) if records[-1]["end_s"] == now_s else {}
        for record in records:
            # A record held back (provisional) ended earlier than it is released.
            step = Step(
                step=record["step"],
                wall_s=record["wall_s"],
                data_wait_s=record["data_wait_s"],
                h2d_s=record["h2d_s"],
                sync_s=record["sync_s"],
                t=now_t - (now_s - record["end_s"]),
            )
            if record["backward_s"] is not None:
                step.backward_s = record["backward_s"]
            if record["data_cpu_s"] is not None:
                step.data_cpu_s = record["data_cpu_s"]
            if memory and record is records[-1]:
                for name, value in memory.items():
                    if value is not None:
                        setattr(step, name, value)
            self.sink.add_step(step, now_s)

    def _release_held(self) -> None:
        """At exit: steps still held back count (no better signal came)."""
        held = self.steps.release_held()
        if held:
            self._write_steps(held, time.perf_counter())
            self.facts.step_signal, self.facts.step_signal_held = self.steps.signal, None

    # Chores: at most once a second.

    def _chores(self, now_s: float) -> None:
        self._chores_s = now_s
        if self.requests.poll():
            self.plan.requested = True
        if self.module_requests.poll():
            self.modules_requested = True
        if not self._group_told:
            self.tell_group_rank()
        self.write_settings_if_changed()

    def tell_group_rank(self) -> None:
        """Once the job's default process group is up, say its rank and world size again in a
        `hello` (same `t`) where the environment said otherwise or nothing (`mp.spawn`, a
        launcher that sets no `RANK`): the ranks are then named as the job knows them."""
        try:
            told = group_rank()
        except Exception as exc:
            self._group_told = True
            self.fail("process group rank", exc)
            return
        if told is None:
            return
        self._group_told = True
        if told == (self.identity.rank, self.identity.world_size):
            return
        self.identity = dataclasses.replace(self.identity, rank=told[0], world_size=told[1])
        hello = hello_record(self.identity, self._torch_version, self._hello_t)
        hello.rank_from = "torch.distributed"
        self.sink.write(hello)

    def write_settings_if_changed(self) -> None:
        if self._settings_broken:
            return
        try:
            settings = settings_record(self.facts, seen_options(), overrides=overrides.applied())
            if settings != self._settings:
                self._settings = settings
                self.sink.write(msgspec.structs.replace(settings, t=time.time()))
        except Exception as exc:
            self._settings_broken = True
            self.fail("settings", exc)

    # Profiler windows.

    def _advance_window(self, now_s: float) -> None:
        """Open, advance or close a window at this step end.

        Opening a window and saving its trace are the agent's time, not the job's: the next
        step is timed from when they finish, so they do not show as a slow step every period.
        """
        try:
            if self.window is not None:
                if self.window.step_ended():
                    self._save_window()
                    self.steps.last_end_s = time.perf_counter()
            elif (
                self.modules is None
                and self.plan.due(self.steps.count, now_s)
                and not job_profiler_active()
            ):
                self._open_window()
                self.steps.last_end_s = time.perf_counter()
        except Exception as exc:
            self.plan.disabled = True
            self.window = None
            self.fail("profiler window", exc)

    def _open_window(self) -> None:
        window = ProfilerWindow(
            RunLayout(self.config.run_dir).traces_dir,
            self.identity.worker,
            first_step=self.steps.count,
            steps=self.config.window_steps,
            shapes=self.config.window_shapes,
        )
        self.plan.opened()
        self.opening_window = True
        try:
            window.open()
        finally:
            self.opening_window = False
            self._note_problems(window)
        self.window = window

    def _save_window(self) -> None:
        window, self.window = self.window, None
        assert window is not None
        try:
            path = window.save(time.time_ns() // 1_000_000)
        finally:
            self._note_problems(window)
        self.plan.closed(time.perf_counter())
        self.sink.write(
            Window(
                t=time.time(),
                path=path.relative_to(self.config.run_dir).as_posix(),
                first_step=window.first_step,
                last_step=window.last_step,
            )
        )

    def discard_window(self, why: str) -> None:
        """Stop an open window without saving it (the job started its own profiler, or exit)."""
        window, self.window = self.window, None
        if window is None:
            return
        self.plan.closed(time.perf_counter())
        try:
            window.discard()
        except Exception as exc:
            self.fail("profiler window", exc)
        self._note_problems(window)
        self.note(f"a profiler window was dropped: {why}", key=f"dropped: {why}")

    # Module timing periods (`agent.module_period`).

    def _advance_modules(self, records: list[EndedStep]) -> None:
        """Start a requested period at this step end (not inside a profiler window), or count
        this step end's steps in the running one and end it when it has them all."""
        try:
            if self.modules is not None:
                if self.modules.step_ended(records):
                    self.end_modules()
            elif self.modules_requested and self.window is None and not self._modules_broken:
                self.modules_requested = False
                period = ModulePeriod(self.steps.count, self.config.module_steps, self._step_thread)
                self.modules = period
                self.sink.write(period.start())
        except Exception as exc:
            self._modules_broken = True
            self.end_modules(write=False)
            self.fail("module timing", exc)

    def end_modules(self, write: bool = True) -> None:
        """Remove the hooks; write what the period measured (fewer steps where it was cut)."""
        period, self.modules = self.modules, None
        if period is None:
            return
        try:
            times = period.finish(device_in_use())
        except Exception as exc:
            self.fail("module timing", exc)
            return
        if write and times is not None:
            self.sink.write(times)

    def _note_problems(self, window: ProfilerWindow) -> None:
        """The profiler's warnings and errors, kept out of the job's stderr, reach the report."""
        for problem in window.problems:
            self.note(f"profiler window: {problem}")

    # Notes, failures and the end.

    def note(self, message: str, key: str | None = None) -> None:
        try:
            self.sink.note_once(key or message, Note(t=time.time(), message=message))
        except Exception:  # nowhere left to report it; the job matters more
            return

    def fail(self, where: str, exc: BaseException, stop: bool = False) -> None:
        if stop:
            self.active = False
        consequence = "the agent stopped timing steps" if stop else f"{where} is off from now on"
        message = f"torchtop agent: {where} failed ({type(exc).__name__}: {exc}); {consequence}"
        self.note(message, key=where)

    def forked(self) -> None:
        """In a forked child: start over as this process, silent until it steps."""
        try:
            self.identity = dataclasses.replace(self.identity, pid=os.getpid(), ppid=os.getppid())
            self.sink = open_sink(self.config.run_dir, self.identity.pid, hold_until_step=True)
            self.steps = StepClock()
            self.window = None
            self.end_modules(write=False)
            self._settings = None
            self._chores_s = None
            self._step_thread = threading.get_ident()
            self.start(self._torch_version, [])
        except Exception:  # an error here would print in the child; stay out instead
            self.active = False

    def exit_requested(self, status: object) -> None:
        """`sys.exit(status)` was called, or `status` (an exception) ends the interpreter: the
        exit status Python will give, for `bye`."""
        if isinstance(status, KeyboardInterrupt):
            # Python ends an uncaught KeyboardInterrupt by SIGINT's default action.
            self._exit_code, self._exit_signal = 130, "SIGINT"
        elif isinstance(status, SystemExit):
            self.exit_requested(status.code)
        elif isinstance(status, BaseException):
            self._exit_code = 1
            self._error = error_lines(status)
        elif status is None or isinstance(status, int):
            self._exit_code = status or 0
        else:  # sys.exit("message") prints it and exits 1
            self._exit_code = 1

    def close(self, reason: str = "exit") -> None:
        """Write `bye` (at interpreter exit); only in the process that attached."""
        if os.getpid() != self.identity.pid or self.sink.closed:
            return
        self.active = False
        try:
            self._release_held()
            self.discard_window("the process exited before the window's last step")
            self.end_modules()
            self.write_settings_if_changed()
            bye = Bye(t=time.time(), reason=reason, exit_code=self._exit_code)
            if self._exit_signal is not None:
                bye.signal = self._exit_signal
            if self._error:
                bye.error = self._error
            self.sink.write(bye)
            self.sink.close()
        except Exception:  # at exit there is no one left to tell; keep the job's exit clean
            return
