"""`torchtop attach PID --inject`: load the agent into a running job, then watch it as `run` does.

The checks that stop nothing come first (`attach.inject.preflight`), then one announcement of what
will happen, then the delivery. Once the agent has answered, the attach is `run`'s live side on
the attach's own run folder: the agent writes the same records, `assess` reads them, and its
profiler windows follow `run`'s schedule (the first at the fifth step after the injection, then
every 30 s), and answer `RUN/requests/window` as under `run`. Asking for one at once was tried:
it profiled the very steps the attach's own start-up slowed, and its breakdown differed from
`run`'s by a third on this machine. However the
attach ends (`--for`, `q`, Ctrl-C, the job's exit) it asks the agent to unload and says whether
it did. A refusal leaves no run folder behind: nothing was recorded.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import sys
from pathlib import Path

import psutil

from torchtop.attach.attach import agent_run_dir, check_target, find_target
from torchtop.attach.inject import Injected, detach, inject, preflight
from torchtop.attach.ptrace_access import check_ptrace
from torchtop.diagnosis.rules import RuleTree
from torchtop.errors import InputError
from torchtop.jobs.processes import is_alive
from torchtop.jobs.records import (
    default_run_dir,
    environment_of,
    write_exit_record,
    write_run_record,
)
from torchtop.live.collect import start_collectors
from torchtop.live.headless import print_report, save_report
from torchtop.live.watch import LiveMonitor
from torchtop.model.report import Report
from torchtop.runs.layout import RunLayout
from torchtop.sessions.watch_options import WatchOptions
from torchtop.sessions.watching import (
    _follow,
    attach_session,
    metrics_endpoint,
    say_where,
    tensorboard_log,
)


def inject_target(pid: int) -> psutil.Process:
    """The process `--inject` may load the agent into, or the one-line refusal: another
    user's process, no such process, or a launcher. Nothing is stopped."""
    with contextlib.suppress(psutil.Error):
        # Before check_target, which cannot read another user's process and would say only that.
        check_ptrace(psutil.Process(pid))
    process = check_target(pid)
    refuse_a_launcher(process)
    return process


def inject_session(pid: int, options: WatchOptions, tree: RuleTree, timeout_s: float) -> int:
    process = inject_target(pid)
    if agent_run_dir(process) is not None:
        print(
            f"torchtop: PID {pid} was started by `torchtop run`: its agent already records "
            "steps and windows, so nothing is injected; following its run folder",
            file=sys.stderr,
        )
        return attach_session(pid, options, tree)
    version = preflight(process)
    announce(pid, version)
    injected = _inject(process, version, options.run_dir or default_run_dir(), timeout_s)
    layout = RunLayout(injected.run_dir)
    try:
        # Whatever fails from here on (a port already taken, Ctrl-C), the agent is unloaded.
        report = _watch(injected, process, options, tree)
    finally:
        print(detach(injected), file=sys.stderr)
    write_exit_record(layout, "detached" if is_alive(process) else "exited")
    save_report(report, layout.root, options.report)
    print_report(report, options.output_format)
    say_where(layout.root)
    return 0


def refuse_a_launcher(process: psutil.Process) -> None:
    """A launcher (torchrun, or a script that spawned its ranks) trains nothing: the agent
    belongs in a rank. Said before anything is stopped, naming the ranks to choose from."""
    target = find_target(process)
    if target is None or target.role == "rank":
        return
    ranks = ", ".join(f"rank {r.rank} PID {r.pid}" for r in target.ranks)
    raise InputError(
        f"PID {process.pid}",
        f"is {target.launcher or 'the parent of its ranks'} and trains nothing: --inject loads "
        f"the agent into one training process: give a rank's PID ({ranks}), or attach without "
        "--inject to watch every rank",
    )


def _inject(
    process: psutil.Process, version: tuple[int, int], run_dir: Path, timeout_s: float
) -> Injected:
    """The agent loaded, recording into `run_dir`; a refusal leaves no folder it made."""
    made = not run_dir.exists()
    layout = RunLayout(run_dir)
    layout.create()
    try:
        injected = inject(process, version, run_dir, timeout_s)
    except (InputError, KeyboardInterrupt):
        if made:
            shutil.rmtree(run_dir, ignore_errors=True)
        raise
    say_loaded(injected)
    write_run_record(layout, "attach", process.cmdline(), process.pid, env=environment_of(process))
    print(f"torchtop: recording to {run_dir}", file=sys.stderr)
    return injected


def _watch(
    injected: Injected, process: psutil.Process, options: WatchOptions, tree: RuleTree
) -> Report:
    """`run`'s live side on the injected agent's records, until the attach ends."""
    run_dir = injected.run_dir

    def alive() -> bool:
        return is_alive(process)

    with (
        metrics_endpoint(options.metrics, run_dir) as served,
        tensorboard_log(options.tensorboard, run_dir, served) as on_tick,
    ):
        collectors = start_collectors(RunLayout(run_dir), process.pid, with_agent=True)
        monitor = LiveMonitor(
            run_dir, tree, for_s=options.for_s, kind="attach", alive=alive, on_tick=on_tick
        )
        try:
            return _follow(monitor, options.headless)
        finally:
            collectors.stop()


def announce(pid: int, version: tuple[int, int]) -> None:
    how = (
        "sys.remote_exec"
        if version >= (3, 14)
        else "gdb (which stops the process for about a second)"
    )
    print(
        f"torchtop: --inject loads torchtop's agent into PID {pid} through {how}: it times "
        "steps from optimizer, backward and DataLoader hooks and takes profiler windows on "
        "request; it unloads (every hook, every thread) when this attach ends",
        file=sys.stderr,
    )


def say_loaded(injected: Injected) -> None:
    """One line, and the delivery's record (`RUN/inject/delivered-<N>.json`)."""
    stopped = (
        f", the process stopped {injected.stopped_s * 1000:.0f} ms"
        if injected.stopped_s is not None
        else ""
    )
    replaced = " (it replaced an earlier attach's agent)" if injected.ack.get("replaced") else ""
    print(f"torchtop: agent loaded into PID {injected.pid}{stopped}{replaced}", file=sys.stderr)
    record = {
        "pid": injected.pid,
        "number": injected.number,
        "method": "gdb" if injected.stopped_s is not None else "remote_exec",
        "stopped_s": injected.stopped_s,
        "ack": dict(injected.ack),
    }
    path = RunLayout(injected.run_dir).inject_dir / f"delivered-{injected.number}.json"
    path.write_text(json.dumps(record), encoding="utf-8")
