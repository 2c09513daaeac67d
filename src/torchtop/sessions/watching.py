"""`run` and `demo` as use cases: launch the job, watch it, report, pass its exit status on.

The report is written to the run folder (and `--report FILE`) whatever happens to the job; the
job's own exit status is torchtop's, unless torchtop stopped it after `--for`, when the work
asked for is done and the status is 0. Under the dashboard a fix can be tried on the job
(`sessions.watched`): the job may then have been relaunched, and the report describes the job
as it ran in the end, with the trials.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import os
import shlex
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

from torchtop.assess.attached_ranks import assess_attached_ranks
from torchtop.assess.context import read_context
from torchtop.assess.snapshot import Snapshot
from torchtop.attach.attach import check_target, naming, resolve
from torchtop.diagnosis.rules import RuleTree
from torchtop.errors import InputError
from torchtop.jobs.job import BESIDE_REPORT, Output, start
from torchtop.jobs.records import (
    default_run_dir,
    environment_of,
    write_exit_record,
    write_run_record,
)
from torchtop.live.collect import follow_ranks, start_collectors
from torchtop.live.headless import ProgressPrinter, print_report, save_report
from torchtop.live.watch import LiveMonitor, TickSink, watch
from torchtop.model.report import Report
from torchtop.report.ending import before_first_step, exit_lines
from torchtop.runs.identity import NodeIdentity, launch_dir, safe_name
from torchtop.runs.layout import RunLayout
from torchtop.runs.node import node_name
from torchtop.runs.nodes import run_has_ended
from torchtop.sessions.cpu_peak_use import cached_peak, measure_after
from torchtop.sessions.run_config import RunConfig
from torchtop.sessions.watch_options import WatchOptions
from torchtop.sessions.watched import WatchedJob

LAUNCHED_ELSEWHERE = (
    "here torchtop only reads the run folder: fixes are tried from the dashboard of the "
    "`torchtop run` that launched the job"
)
"""What `a` says under `watch`, and `attach` to a job with an agent: a launcher is elsewhere."""
ATTACH_NO_OUTPUT = "attach did not start this job: its output is where it was started"
"""What `o` says under `attach`, where torchtop kept no output of the job."""
FOLDER_NO_OUTPUT = "this run folder keeps no output of its job: it went to where it was started"
MULTI_NODE_NOT_APPLIED = (
    "this node runs one part of a job on several nodes: relaunch every node with the fix "
    "(docs/multi-node.md)"
)


def run_session(
    command: Sequence[str],
    options: WatchOptions,
    tree: RuleTree,
    kind: str,
    config: RunConfig | None = None,
) -> int:
    """`config`: the `torchtop.toml` that `run` applies (its command is already in `command`)."""
    if not command:
        raise InputError(
            "command", "nothing to run: give it after `--`, e.g. `torchtop run -- python train.py`"
        )
    config = config or RunConfig(None, tuple(command))
    for line in config.announcement():
        print(line, file=sys.stderr)
    shared_dir = options.run_dir or default_run_dir()
    # Several launchers sharing `--run-dir` each write under their node's own folder.
    run_dir, node = launch_dir(shared_dir, os.environ)
    # Listening first: a port already taken is bad input, said before any job starts.
    with (
        metrics_endpoint(options.metrics, shared_dir) as on_tick,
        serve_endpoint(options.serve, run_dir, node),
    ):
        return _run(command, options, tree, kind, config, (run_dir, node), on_tick)


def _run(
    command: Sequence[str],
    options: WatchOptions,
    tree: RuleTree,
    kind: str,
    config: RunConfig,
    launched: tuple[Path, NodeIdentity | None],
    on_tick: TickSink | None,
) -> int:
    run_dir, node = launched
    # The job's own output goes to the terminal only where nothing else needs it: not under the
    # dashboard, nor where stdout is the JSON report; and there on stderr, as stdout ends with
    # the text report, which a `> report.txt` must catch alone.
    to_terminal = options.headless and options.output_format != "json"
    job_log = None if to_terminal else RunLayout(run_dir).job_log
    env = {**os.environ, **config.tuned.env}
    output = BESIDE_REPORT if job_log is None else Output.log(job_log)
    # Read before the job starts: never measured while it runs (`sessions.cpu_peak_use`).
    context = dataclasses.replace(read_context(), cpu_peak=cached_peak(command, env))
    try:
        job = start(
            command,
            run_dir,
            kind,
            env=env,
            overrides=config.tuned.overrides,
            output=output,
            node=node,
        )
    except FileNotFoundError:
        raise InputError(command[0], "command not found") from None
    except PermissionError:
        raise InputError(command[0], "not executable") from None
    print(f"torchtop: recording to {run_dir}", file=sys.stderr)
    if job_log is None:
        print("torchtop: the job's output on stderr, the report on stdout", file=sys.stderr)
    collectors = start_collectors(job.layout, job.pid, with_agent=True)
    with tensorboard_log(options.tensorboard, run_dir, on_tick) as on_tick:
        monitor = LiveMonitor(
            run_dir, tree, job=job, for_s=options.for_s, kind=kind, on_tick=on_tick,
            context=context,
        )  # fmt: skip
        watched = WatchedJob(monitor, job, collectors, command, run_dir, kind)
        watched.plan = config.plan(watched.plan)  # a relaunch keeps what the file applied
        try:
            chosen = applier(watched, node)
            why_not = None if chosen else MULTI_NODE_NOT_APPLIED
            # Without `--for`, the dashboard stays with the final figures once the job ends.
            stay = options.for_s is None
            followed = _follow(monitor, options.headless, chosen, why_not, stay, run_dir)
            report = watched.with_trials(followed)
        finally:
            watched.close()
    if job_log is not None:
        print(f"torchtop: the job's output is in {job_log}", file=sys.stderr)
    if watched.job is not job:
        relaunched = watched.job.layout.root
        print(
            f"torchtop: after the relaunch, in {RunLayout(relaunched).job_log}",
            file=sys.stderr,
        )
    save_report(report, run_dir, options.report)
    print_report(report, options.output_format)
    if options.output_format == "json":  # stdout holds the JSON alone: the failure on stderr
        for line in exit_lines(report.exit, "torchtop: "):
            print(line, file=sys.stderr)
    say_where(run_dir)
    measure_after(report.job.efficiency, command, env)
    final = watched.job
    return 0 if final.stopped_by_us else final.shell_status()


def attach_session(pid: int, options: WatchOptions, tree: RuleTree) -> int:
    """Watch a running process; never stop it. With an agent inside, read its run folder."""
    process = check_target(pid)
    # A launcher or a rank of a job of several: the whole job is watched (its launcher's tree).
    found = resolve(process)
    agent_dir, root, target, alive = found.agent_dir, found.root, found.target, found.alive
    context = read_context(frames=agent_dir is None)
    if agent_dir is not None:
        with (
            metrics_endpoint(options.metrics, agent_dir) as served,
            tensorboard_log(options.tensorboard, agent_dir, served) as on_tick,
        ):
            monitor = LiveMonitor(
                agent_dir, tree, for_s=options.for_s, kind="attach", alive=alive, on_tick=on_tick,
                assessor=naming(target, context), context=context,
            )  # fmt: skip
            # Started by `torchtop run` elsewhere, its folder keeps its output.
            return _follow_folder(monitor, options, agent_dir, ATTACH_NO_OUTPUT)
    run_dir = options.run_dir or default_run_dir()
    with (
        metrics_endpoint(options.metrics, run_dir) as served,
        tensorboard_log(options.tensorboard, run_dir, served) as on_tick,
    ):
        layout = RunLayout(run_dir)
        layout.create()
        write_run_record(
            layout, "attach", root.cmdline(), root.pid, attached=target, env=environment_of(root)
        )
        print(f"torchtop: recording to {run_dir}", file=sys.stderr)
        collectors = start_collectors(
            layout, root.pid, with_agent=False, budget_share=options.sample_budget_share
        )
        if target is not None:  # a rank its launcher restarts, or one that joins, is followed
            follow_ranks(collectors, layout, target)
        monitor = LiveMonitor(
            run_dir,
            tree,
            for_s=options.for_s,
            kind="attach",
            alive=alive,
            assessor=functools.partial(assess_attached_ranks, context=context),
            on_tick=on_tick,
            context=context,
        )
        try:
            report = _follow(monitor, options.headless, why_no_output=ATTACH_NO_OUTPUT)
        finally:
            collectors.stop()
    write_exit_record(layout, "detached" if alive() else "exited")
    save_report(report, run_dir, options.report)
    print_report(report, options.output_format)
    say_where(run_dir)
    return 0


@contextlib.contextmanager
def metrics_endpoint(address: str | None, run_dir: Path) -> Iterator[TickSink | None]:
    """With `--metrics`: a registry of our own served on `address` while the block runs, and
    the tick sink that feeds it; without it, None (and prometheus_client is never imported)."""
    if address is None:
        yield None
        return
    from prometheus_client import CollectorRegistry

    from torchtop.exporters.metrics import RunMetrics
    from torchtop.exporters.metrics_server import serve_metrics

    collector = RunMetrics(run_dir.name, safe_name(node_name()))
    registry = CollectorRegistry()
    registry.register(collector)
    server = serve_metrics(address, registry)
    try:
        yield collector.publish
    finally:
        server.close()


@contextlib.contextmanager
def serve_endpoint(address: str | None, run_dir: Path, node: NodeIdentity | None) -> Iterator[None]:
    """With `--serve`: this node's folder served on `address` while the block runs, and after
    the job, kept served until a watcher has fetched the last records (bounded)."""
    if address is None:
        yield
        return
    from torchtop.serve.node_stream import serve_node

    run_dir.mkdir(parents=True, exist_ok=True)
    name = node.name if node is not None else safe_name(node_name())
    server, stream = serve_node(address, run_dir, name)
    try:
        yield
        stream.linger()
    finally:
        server.close()


@contextlib.contextmanager
def tensorboard_log(
    option: str | None, run_dir: Path, also: TickSink | None = None
) -> Iterator[TickSink | None]:
    """With `--tensorboard [DIR]`: the tick sink that writes event files (after `also`, the
    other observer); without it, `also` alone."""
    if option is None:
        yield also
        return
    from torchtop.exporters.tensorboard import DEFAULT_FOLDER, TensorBoardLog

    folder = Path(option) if option else run_dir / DEFAULT_FOLDER
    log = TensorBoardLog(folder, run_dir)
    print(f"torchtop: TensorBoard event files in {folder}", file=sys.stderr)

    def on_tick(snapshot: Snapshot) -> None:
        if also is not None:
            also(snapshot)
        log.publish(snapshot)

    try:
        yield on_tick
    finally:
        log.close()


def watch_session(targets: Sequence[str], options: WatchOptions, tree: RuleTree) -> int:
    """Follow a run another process launched (a run folder, maybe shared by several nodes'
    launchers) until `--for`, Ctrl-C, or every node's job has ended. It only reads: nothing is
    stopped and nothing is written into the folder (but the event files a bare `--tensorboard`
    asks for); the report goes to `--report` and stdout."""
    urls = [t for t in targets if t.startswith(("http://", "https://"))]
    if urls:
        from torchtop.sessions.streams import watch_streams

        folders = [t for t in targets if t not in urls]
        if folders:
            raise InputError(folders[0], "watch follows either run folders or streams, not both")
        mirror = options.run_dir or default_run_dir()
        with tensorboard_log(options.tensorboard, mirror) as on_tick:
            return watch_streams(urls, options, tree, mirror, on_tick)
    if len(targets) > 1:
        raise InputError(targets[1], "watch follows one run folder (its nodes share it)")
    run_dir = Path(targets[0])
    if not run_dir.is_dir():
        raise InputError(
            targets[0],
            "no such run folder (`torchtop run --run-dir DIR -- python train.py` records one)",
        )
    print(f"torchtop: watching {run_dir}", file=sys.stderr)

    def alive() -> bool:
        return not run_has_ended(run_dir)

    # With --tensorboard, the event files are the one thing written (where the user said).
    with tensorboard_log(options.tensorboard, run_dir) as on_tick:
        monitor = LiveMonitor(
            run_dir, tree, for_s=options.for_s, kind="run", alive=alive, on_tick=on_tick
        )
        return _follow_folder(monitor, options, run_dir)


def _follow_folder(
    monitor: LiveMonitor, options: WatchOptions, folder: Path, why_no_output: str | None = None
) -> int:
    """Follow a folder someone else writes: the report to `--report` and stdout, never into
    the folder; `o` shows the output its job keeps there."""
    report = _follow(
        monitor, options.headless, None, LAUNCHED_ELSEWHERE, output_dir=folder,
        why_no_output=why_no_output or FOLDER_NO_OUTPUT,
    )  # fmt: skip
    if options.report:
        save_report(report, None, options.report)
    print_report(report, options.output_format)
    return 0


def say_where(run_dir: Path) -> None:
    """The last line on stderr: where the run is kept, and the command that opens it again."""
    print(
        f"torchtop: the run is kept in {run_dir}; `torchtop view {shlex.quote(str(run_dir))}` "
        "shows it again",
        file=sys.stderr,
    )


def applier(watched: WatchedJob, node: NodeIdentity | None) -> WatchedJob | None:
    """Who may try fixes from the dashboard: the watched job, unless it is one node's part of a
    job on several nodes. Stopping and relaunching one node's `torchrun` would break the whole
    job's rendezvous, so there the fix is shown but applied by the user on every node."""
    if node is None:
        return watched
    print(
        f"torchtop: node {node.name} is one part of a job on several nodes: fixes are shown, "
        "not applied from here; relaunch every node with them (docs/multi-node.md)",
        file=sys.stderr,
    )
    return None


def _follow(
    monitor: LiveMonitor,
    headless: bool,
    watched: WatchedJob | None = None,
    why_no_apply: str | None = None,
    stay: bool = False,
    output_dir: Path | None = None,
    why_no_output: str | None = None,
) -> Report:
    """Progress lines on stderr, or the dashboard (where `watched` lets the user try fixes,
    and `why_no_apply` is what `a` says where it cannot); either way the final report. With
    `stay`, the dashboard stays once the job has ended, with its final figures and how it
    ended, until `q`. The demo's dashboard stays until `q`, so its footer says how long it has
    run and how to end it. `o` shows the output of the job `output_dir` runs, or says
    `why_no_output`."""
    if headless:
        printer = ProgressPrinter()
        report = watch(monitor, on_update=printer)
        if not before_first_step(report):  # else its EXIT says all there is
            printer.final(report, monitor.clock() - monitor.started)
        return report
    from torchtop.tui.app import run_live

    clock = monitor.kind == "demo"
    return run_live(
        monitor, applier=watched, clock=clock, why_no_apply=why_no_apply, stay=stay,
        output_dir=output_dir, why_no_output=why_no_output,
    )  # fmt: skip
