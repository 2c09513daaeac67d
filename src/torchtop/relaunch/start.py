"""Start a job from a launch plan, and stop it without leaving a process behind.

`start_job` runs the plan's command in the plan's working directory with the plan's whole
environment, plus the agent's variables (`live.launch.job_environment`), the overrides for the
agent (`TORCHTOP_OVERRIDES`) and when to capture a profiler window. The job runs in its own
process group, as under `torchtop run`.

`stop_job` is `Job.stop` (SIGINT to the group, then SIGTERM, then SIGKILL) made safe for
launchers: `torchrun` starts each worker in a session of its own, so a signal to the job's group
never reaches them, and a worker whose launcher died is re-parented where the job's tree no
longer shows it. So the tree is listed before the first signal, and whatever of it survives
the graceful stop is killed, with its own process group.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import psutil

from torchtop.agent.config import WINDOW_EVERY_ENV, WINDOW_FIRST_STEP_ENV, WINDOW_STEPS_ENV
from torchtop.agent.overrides import OVERRIDES_ENV
from torchtop.live.launch import STOP_GRACE_S, Job, job_environment
from torchtop.model.plan import LaunchPlan
from torchtop.runs.journal import write_once
from torchtop.runs.layout import RUN_SCHEMA, RunLayout

SURVIVOR_WAIT_S = 5.0


WINDOW_STEPS = 3


@dataclass(frozen=True)
class WindowAt:
    """Capture one profiler window of `steps` steps, starting at step `first_step`."""

    first_step: int
    steps: int = WINDOW_STEPS


def launch_environment(plan: LaunchPlan, run_dir: Path, window: WindowAt | None) -> dict[str, str]:
    """The plan's environment with the agent on; without `window`, profiler windows are taken
    only on request (`RUN/requests/window`)."""
    env = job_environment(run_dir, base=dict(plan.env))
    if plan.overrides:
        env[OVERRIDES_ENV] = json.dumps(dict(plan.overrides), sort_keys=True)
    if window is None:
        env[WINDOW_EVERY_ENV] = "0"
        env[WINDOW_STEPS_ENV] = str(WINDOW_STEPS)
    else:
        env[WINDOW_FIRST_STEP_ENV] = str(window.first_step)
        env[WINDOW_STEPS_ENV] = str(window.steps)
    return env


def start_job(
    plan: LaunchPlan,
    run_dir: Path,
    window: WindowAt | None = None,
    capture_output: bool = True,
    kind: str = "tune",
) -> Job:
    """Launch `plan` recorded into `run_dir`; its output goes to `run_dir/{stdout,stderr}.log`
    when `capture_output`, else to this process's own streams."""
    layout = RunLayout(run_dir)
    layout.create()
    env = launch_environment(plan, run_dir, window)
    with contextlib.ExitStack() as files:
        out = err = None
        if capture_output:
            out = files.enter_context((run_dir / "stdout.log").open("wb"))
            err = files.enter_context((run_dir / "stderr.log").open("wb"))
        started = time.time()
        process = subprocess.Popen(
            list(plan.command),
            env=env,
            cwd=plan.cwd,
            stdout=out,
            stderr=err,
            start_new_session=True,
        )
    _write_run_record(layout, kind, plan, process.pid, started)
    return Job(list(plan.command), layout, process, started)


def _write_run_record(
    layout: RunLayout, kind: str, plan: LaunchPlan, pid: int, started: float
) -> None:
    from torchtop import __version__

    write_once(
        layout.run_json,
        {
            "schema": RUN_SCHEMA,
            "kind": kind,
            "command": list(plan.command),
            "cwd": plan.cwd,
            "pid": pid,
            "started_at": started,
            "host": os.uname().nodename,
            "cpu_count": os.cpu_count(),
            "torchtop": __version__,
            "overrides": dict(plan.overrides),
            "fixes": [f.as_json() for f in plan.fixes],
        },
    )


def job_tree(pid: int) -> list[psutil.Process]:
    """The job's process and all its descendants, now."""
    try:
        root = psutil.Process(pid)
        return [root, *root.children(recursive=True)]
    except psutil.Error:
        return []


def stop_job(job: Job, grace_s: float = STOP_GRACE_S) -> dict[str, object]:
    """Stop the job gracefully, kill what of its tree survives, and record how it ended.

    A job that already ended by itself is recorded as it ended; what it left in its process
    group (a DataLoader worker that outlived it) is killed."""
    if job.poll() is None:
        tree = job_tree(job.pid)
        job.stop(grace_s)
        kill_survivors(tree)
    else:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(job.pid, signal.SIGKILL)
    return job.record_exit()


def kill_survivors(tree: list[psutil.Process]) -> None:
    alive = [p for p in tree if _alive(p)]
    if not alive:
        return
    groups = {_group(p) for p in alive} - {None, os.getpgrp()}
    leaders = {p.pid for p in tree}
    for group in groups:
        if group in leaders:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(group, signal.SIGKILL)
    for process in alive:
        with contextlib.suppress(psutil.Error):
            process.kill()
    psutil.wait_procs(alive, timeout=SURVIVOR_WAIT_S)


def _alive(process: psutil.Process) -> bool:
    try:
        return process.is_running() and process.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _group(process: psutil.Process) -> int | None:
    try:
        return os.getpgid(process.pid)
    except (ProcessLookupError, PermissionError):
        return None
