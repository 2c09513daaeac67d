"""A run of a job profiled early, for a job too short for the measured run's window.

`tune` measures the job first, then asks its agent for a profiler window (`measure`, on
request, so the profiler never slows the measured steps). A job that ends within a second or
so of its measured steps ends before the agent answers: its run has step timing only, and
every class but the DataLoader wait is "not measured". This run is the same plan again with
the window scheduled from `first_step` (the end of the measured run's warm-up) and the job's
stacks sampled as `run` samples them (`collectors.stacks`), so the diagnosis sees a breakdown
and can locate a code fix on a line of the job (each rank's, under torchrun) where `tune`
would otherwise say it has no Python stacks. It stops once the window is saved and a stack
was dumped after the job started stepping, or when the job ends, or at `timeout_s`.
"""

from __future__ import annotations

import time
from pathlib import Path

from torchtop.collectors.stack_samples import stacks_sampled
from torchtop.jobs.env import Windows
from torchtop.jobs.job import TERMINAL, start_plan
from torchtop.model.plan import LaunchPlan
from torchtop.runs.state import RunState, RunWatcher

POLL_S = 0.2
NEVER_AGAIN_S = 1e9
"""The periodic schedule's gap after the first window: one window is all this run needs."""


def profiled_run(
    plan: LaunchPlan,
    run_dir: Path,
    first_step: int,
    timeout_s: float,
    capture_output: bool = True,
) -> bool:
    """Run `plan` into `run_dir` with a window from step `first_step`; whether it has one."""
    windows = Windows(every_s=NEVER_AGAIN_S, first_step=max(first_step, 1))
    job = start_plan(plan, run_dir, "tune", windows, None if capture_output else TERMINAL)
    watcher = RunWatcher(run_dir)
    deadline_s = time.monotonic() + timeout_s
    try:
        with stacks_sampled(job.pid, run_dir):
            while job.poll() is None and time.monotonic() < deadline_s:
                if _profiled(watcher.poll()):
                    break
                time.sleep(POLL_S)
    finally:
        job.finish()
    return any(p.windows for p in watcher.poll(final=True).training_processes)


def _profiled(state: RunState) -> bool:
    """Every stepping process has its window, and a stack was dumped once the job stepped."""
    processes = state.training_processes
    if not processes or not all(p.windows for p in processes):
        return False
    first = processes[0].steps[0] if processes[0].steps else None
    started = first.t - first.wall_s if first is not None else None
    return started is not None and any(r.t >= started for r in state.samples.stacks)
