"""`torchtop watch http://node-a:PORT http://node-b:PORT ...`: follow nodes' `--serve` streams.

Each node's new records are pulled into a local mirror laid out as a run folder several
launchers share (`serve.stream_mirror`), and the mirror is followed with the same monitor,
dashboard and headless printer as `watch RUN_DIR`: nothing received is lost, and `torchtop
analyze DIR` reads the mirror afterwards. What only a stream knows (whether a node answers,
and when it last did) is added to each tick's report here: the `nodes` entries' `answering`
and `last_seen`, and a note the dashboard shows; headless, a line when a node falls silent.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path

import msgspec

from torchtop.assess.context import read_context
from torchtop.assess.run import assess
from torchtop.diagnosis.rules import RuleTree
from torchtop.jobs.records import default_run_dir
from torchtop.live.headless import ProgressPrinter, print_report, save_report
from torchtop.live.watch import LiveMonitor, TickSink, watch
from torchtop.model.analysis import RankAnalysis
from torchtop.model.findings import Verdict
from torchtop.model.report import Report
from torchtop.runs.state import RunState
from torchtop.serve.node_stream import TOKEN_VARIABLE
from torchtop.serve.stream_mirror import FeedStatus, StreamMirror, check_url
from torchtop.sessions.watch_options import WatchOptions


def watch_streams(
    urls: Sequence[str],
    options: WatchOptions,
    tree: RuleTree,
    run_dir: Path | None,
    on_tick: TickSink | None = None,
) -> int:
    """Mirror the streams at `urls` into `run_dir` and follow the mirror until `--for` or every
    stream has ended; `on_tick` observes each tick's snapshot (`--tensorboard`), the report is
    printed as `--format` says and written to `--report`."""
    bases = [check_url(url) for url in urls]
    root = run_dir or default_run_dir()
    mirror = StreamMirror(bases, root, options.token or os.environ.get(TOKEN_VARIABLE) or None)
    for status in mirror.connect():
        print(f"torchtop: {status.url}: {status.error}; following the others", file=sys.stderr)
    print(f"torchtop: mirroring {len(bases)} node stream(s) into {root}", file=sys.stderr)
    mirror.start()

    context = read_context()

    def assessor(
        state: RunState, windows: Mapping[int, RankAnalysis], rules: RuleTree, kind: str
    ) -> Report:
        report = assess(state, windows, rules, kind, context=context)
        return with_streams(report, mirror.statuses())

    monitor = LiveMonitor(
        root,
        tree,
        for_s=options.for_s,
        kind="run",
        alive=lambda: not mirror.done(),
        assessor=assessor,
        on_tick=on_tick,
        context=context,
    )
    try:
        report = _follow(monitor, mirror, options.headless)
    finally:
        mirror.close()
    if options.report:
        save_report(report, None, options.report)
    print_report(report, options.output_format)
    print(f"torchtop: the mirrored run is in {root} (torchtop analyze reads it)", file=sys.stderr)
    return 0


STREAMS_NO_OUTPUT = "the streams carry no job output: it is in each node's run folder (job.log)"


def _follow(monitor: LiveMonitor, mirror: StreamMirror, headless: bool) -> Report:
    if not headless:
        from torchtop.tui.app import run_live

        return run_live(monitor, why_no_output=STREAMS_NO_OUTPUT)
    printer = ProgressPrinter()
    told: dict[str, bool | None] = {}

    def on_update(report: Report, shown: Verdict, elapsed_s: float) -> None:
        printer(report, shown, elapsed_s)
        for status in mirror.statuses():
            if told.get(status.url) != status.answering and status.answering is not None:
                if status.answering is False or told.get(status.url) is False:
                    print(f"torchtop: {stream_news(status)}", file=sys.stderr, flush=True)
                told[status.url] = status.answering

    report = watch(monitor, on_update=on_update)
    printer.final(report, monitor.clock() - monitor.started)
    return report


def stream_news(status: FeedStatus) -> str:
    """One line on a node's stream: answering, or silent since when it was last seen."""
    name = f"node {status.name} ({status.url})" if status.name else status.url
    if status.answering:
        return f"{name} answering"
    seen = status.last_seen_epoch_s
    when = "never answered" if seen is None else f"not answering since {_clock(seen)}"
    return f"{name} {when}: {status.error}"


def with_streams(report: Report, statuses: Sequence[FeedStatus]) -> Report:
    """`report` with each node's stream status in its `nodes` entry, and a note (shown on the
    dashboard) for each node that does not answer."""
    by_name = {s.name: s for s in statuses if s.name is not None}
    nodes = tuple(
        msgspec.structs.replace(
            node,
            answering=bool(by_name[node.name].answering),
            last_seen_epoch_s=by_name[node.name].last_seen_epoch_s,
        )
        if node.name in by_name
        else node
        for node in report.nodes
    )
    silent = tuple(stream_news(s) for s in statuses if s.answering is False)
    job = report.job
    if silent:
        job = msgspec.structs.replace(job, notes=silent + job.notes)
    return msgspec.structs.replace(report, nodes=nodes, job=job, notes=silent + report.notes)


def _clock(epoch_s: float) -> str:
    return datetime.fromtimestamp(epoch_s, UTC).isoformat(timespec="seconds")
