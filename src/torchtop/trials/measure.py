"""One measured run: launch a plan, time its steady-state steps, stop it.

The run is a real launch into its own run folder, read back through `RunWatcher` as the live
view reads it. Its warm-up (imports, allocator and cuDNN warm-up, compiles, DataLoader workers
starting and the batches they queued) is left out, found by the same rule for every variant of
a trial (`warmup.end_of_warmup`: at least `warmup_steps` and the queued batches, then until step
times are stationary, with a cap) and recorded with the measurement.

The measurement is `steps` steps, and, with `min_duration_s`, as many more as fill that much
time: a fast job's steps are short against its periodic costs (an epoch boundary restarting
DataLoader workers, workers delivering their batches in bursts), so a count alone would miss
them. Steps/s is the count over the summed wall time. With `window`, the agent is then asked
for profiler windows (`RUN/requests/window`), one after the other, and its Python stacks are
sampled meanwhile (`collectors.stack_samples`), so the same run can be diagnosed, and its code
fixes put on the job's lines, without the profiler or the dumps slowing the measured steps.
`WINDOWS` of them: the diagnosis pools its windows, and one window of a few steps can name
either of two close causes (the `threads` job's baseline named its DataLoader in 2 windows of
5, its 8 threads in the others).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from torchtop.collectors.stack_samples import stacks_sampled
from torchtop.jobs.env import ON_REQUEST
from torchtop.jobs.job import TERMINAL, start_plan
from torchtop.model.plan import LaunchPlan
from torchtop.model.trials import MeasuredRun, Span, Warmup
from torchtop.runs.layout import RunLayout
from torchtop.runs.records import ExitRecord, Settings
from torchtop.runs.state import ProcessState, RunState, RunWatcher, load_run
from torchtop.trials.handle import TrialHandle
from torchtop.trials.load import LoadMeter
from torchtop.trials.warmup import end_of_warmup, queued_batches

POLL_INTERVAL_S = 0.2
WINDOW_WAIT_MAX_S = 20.0
WINDOW_WAIT_STEPS = 10
"""A window is waited for at least this many of the job's steps (and `WINDOW_WAIT_MAX_S`): the
agent's 4 steps, begun at the step after the request is seen, and its dump. With 3 s steps,
20 s missed every window of a baseline, and tune profiled a second run only for that."""
WINDOWS = 2
"""Profiler windows a diagnosed run is given, each asked for once the one before it is saved."""


class MeasureError(RuntimeError):
    """The run did not yield enough steady-state steps (it ended, failed or timed out)."""

    def __init__(self, message: str, ending: ExitRecord) -> None:
        super().__init__(message)
        self.ending = ending


@dataclass(frozen=True)
class Measurement(MeasuredRun):
    """A measured run with what its agent said of the job (settings, argv) and its ending."""

    ending: ExitRecord = field(default_factory=ExitRecord)
    """`exit.json` as written when the run was stopped (nothing known where none was)."""
    settings: Settings | None = None
    argv: tuple[str, ...] | None = None
    has_window: bool = False
    cost: RunCost | None = None
    """What the launch took besides its measured steps (`tuning.budget` sizes trials by it)."""


@dataclass(frozen=True)
class RunCost:
    startup_s: float
    """From the launch to the start of the first step: imports, data set up, workers."""
    stop_s: float
    """From the end of the last step to the job's end: stopping it, and the polls' lag."""
    stepped_s: float
    """All its timed steps, warm-up and profiler windows included."""
    total_s: float
    """From the launch to the job's end."""


def measure(
    plan: LaunchPlan,
    run_dir: Path,
    span: Span,
    timeout_s: float,
    window: bool = False,
    capture_output: bool = True,
    handle: TrialHandle | None = None,
) -> Measurement:
    """Run `plan` until `span` is recorded (and the window, if asked), then stop it; the job
    is registered on `handle` while it runs, so the trial's caller can end it."""
    handle = handle or TrialHandle()
    output = None if capture_output else TERMINAL
    launched_s = time.time()
    job = start_plan(plan, run_dir, "tune", ON_REQUEST, output)
    meter = LoadMeter.start()
    handle.measuring(job)
    watcher = RunWatcher(run_dir)
    deadline_s = time.monotonic() + timeout_s
    try:
        if _wait_for_steps(job.poll, watcher, span, deadline_s) and window:
            # The stacks too, once the measured steps are in: a code fix is then put on the
            # job's own line, where tune said "no Python stacks of the job were recorded".
            with stacks_sampled(job.pid, run_dir):
                _wait_for_windows(job.poll, watcher, run_dir)
    finally:
        handle.measuring(None)  # before the job is reaped: its pid must not be signalled after
        other_cores = meter.other_cores(job.pid)
        last_step_s = time.time()
        ending = job.finish()
    process = main_process(watcher.poll(final=True))
    walls, warmup = _steady(process, span) if process else ((), None)
    if len(walls) < span.steps:
        raise MeasureError(_shortfall(run_dir, len(walls), span, ending), ending)
    assert process is not None
    return Measurement(
        run_dir=run_dir,
        step_wall_s=walls,
        warmup_steps=warmup.steps if warmup is not None else span.warmup_steps,
        ending=ending,
        settings=process.settings,
        argv=process.argv,
        has_window=bool(process.windows),
        warmup=warmup,
        other_cores=other_cores,
        cost=_cost(process, launched_s, last_step_s),
    )


def _cost(process: ProcessState, launched_s: float, stopping_s: float) -> RunCost | None:
    """What the launch took besides its steps: from the launch to the first step's start, and
    from the last step's end to the job's end (None where the first steps were not kept)."""
    steps = process.steps
    if not steps or process.steps_seen > len(steps):
        return None
    first, last = steps[0], steps[-1]
    startup_s = max(first.t - first.wall_s - launched_s, 0.0)
    stop_s = max(time.time() - min(last.t, stopping_s), 0.0)
    stepped_s = sum(s.wall_s for s in steps)
    return RunCost(
        startup_s=round(startup_s, 3),
        stop_s=round(stop_s, 3),
        stepped_s=round(stepped_s, 3),
        total_s=round(time.time() - launched_s, 3),
    )


def main_process(state: RunState) -> ProcessState | None:
    """Rank 0, or the only process that steps."""
    processes = state.training_processes
    return processes[0] if processes else None


def _steady(process: ProcessState, span: Span) -> tuple[tuple[float, ...], Warmup | None]:
    """The measured steps (after the warm-up, before any profiler window) and the warm-up."""
    end = process.windows[0].first_step if process.windows else None
    timed = [s.wall_s for s in process.steps if end is None or s.step < end]
    warmup = _warmup(process, timed, span)
    if warmup is None:
        return (), None
    steady = timed[warmup.steps :]
    if span.min_duration_s <= 0:
        steady = steady[: span.steps]
    return tuple(steady), warmup


def _warmup(process: ProcessState, timed: list[float], span: Span) -> Warmup | None:
    return end_of_warmup(timed, queued_batches(process.settings), span)


def _measured_enough(process: ProcessState, span: Span) -> bool:
    if process.settings is None:
        return False  # the DataLoader's queue is not known yet, so neither is the warm-up
    timed = [s.wall_s for s in process.steps]
    warmup = _warmup(process, timed, span)
    if warmup is None:
        return False
    walls = timed[warmup.steps :]
    return len(walls) >= span.steps and sum(walls) >= span.min_duration_s


def _wait_for_steps(
    poll: Callable[[], int | None], watcher: RunWatcher, span: Span, deadline_s: float
) -> bool:
    """Whether the span was recorded before the job ended or the deadline passed."""
    while poll() is None and time.monotonic() < deadline_s:
        process = main_process(watcher.poll())
        if process is not None and _measured_enough(process, span):
            return True
        time.sleep(POLL_INTERVAL_S)
    return False


def _wait_for_windows(poll: Callable[[], int | None], watcher: RunWatcher, run_dir: Path) -> None:
    """`WINDOWS` windows, each asked for once the last is saved (a request newer than the one
    an agent answered last gets one more window), until the job ends or one does not come
    within `WINDOW_WAIT_STEPS` of its steps (the run's own timeout bounds its measured steps,
    not its windows: a slow-step job's windows come after them)."""
    request = RunLayout(run_dir).window_request
    request.parent.mkdir(parents=True, exist_ok=True)
    for wanted in range(1, WINDOWS + 1):
        request.touch()
        wait_s = max(WINDOW_WAIT_MAX_S, WINDOW_WAIT_STEPS * _step_s(main_process(watcher.poll())))
        window_deadline_s = time.monotonic() + wait_s
        while True:
            if poll() is not None or time.monotonic() >= window_deadline_s:
                return
            process = main_process(watcher.poll())
            if process is not None and len(process.windows) >= wanted:
                break
            time.sleep(POLL_INTERVAL_S)


def _step_s(process: ProcessState | None) -> float:
    """The median of the job's recent steps (0 where none was timed)."""
    walls = sorted(s.wall_s for s in list(process.steps)[-20:]) if process is not None else []
    return walls[len(walls) // 2] if walls else 0.0


def _shortfall(run_dir: Path, got: int, span: Span, ending: ExitRecord) -> str:
    how = ending.how or "ended"
    status = ending.exit_status
    said = f" (exit status {status})" if how != "stopped" and status is not None else ""
    state = load_run(run_dir)
    output = state.layout.stderr_log
    if state.processes and not state.training_processes:
        ran_s = ending.duration_s
        ran = f" after {ran_s:.0f} s" if isinstance(ran_s, float) else ""
        # The agent ran but saw no step: the job may well have trained, just unseen.
        return (
            f"{run_dir}: no steps were detected: the job {how}{said}{ran} with no "
            "optimizer.step(), backward() or DataLoader iteration the agent could see; call "
            f"torchtop.step() once per step (see README). Its output: {output}"
        )
    return (
        f"{run_dir}: only {got} of {span.steps} steady-state steps (after a warm-up of at least "
        f"{span.warmup_steps}) were recorded; the job {how}{said}. A trial needs a job that "
        f"runs longer than that: see {output}"
    )
