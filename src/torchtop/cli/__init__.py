"""The verbs of CONTRACT.md; argument parsing and exit statuses only.

Bad input (a missing path, an unreadable trace, an invalid rule file) exits with status 2 and
one line on stderr naming the input; no traceback reaches the user.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import difflib
import json
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from torchtop.errors import EXIT_INTERRUPTED, InputError, percent, positive_seconds

if TYPE_CHECKING:
    from torchtop.model.report import JobReports

EXIT_OK = 0
EXIT_BAD_INPUT = 2
DEMO_FOR_S = 30.0
"""`demo --headless` stops after this long unless `--for` says otherwise; its dashboard stays
until `q`."""
BLAS_THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
VERB_ALIASES = {"analyse": "analyze"}
"""Other spellings a verb answers to (the help's own British spelling among them)."""

EXAMPLES = {
    "analyze": """examples:
  torchtop analyze trace.json.gz               one Kineto trace
  torchtop analyze traces/                     a folder of them, one per rank
  torchtop analyze torchtop-runs/20261127-0149 a run recorded by `torchtop run`
  torchtop analyze trace.json --format json > report.json
  torchtop analyze /shared/traces --cluster tcp://host:8786   each rank a task on a Dask cluster""",
    "run": """examples:
  torchtop run -- python train.py --lr 3e-4
  torchtop run --headless --for 120 --report r.json -- torchrun --nproc_per_node 8 train.py
  torchtop run --metrics 9400 -- python train.py  (Prometheus on 127.0.0.1:9400)""",
    "demo": """examples:
  torchtop demo                       the dashboard; `a` tries the fix, `q` quits
  torchtop demo --headless --for 20   progress on stderr, the report at the end
  torchtop demo -- --num-workers 4    the demo job with other options""",
    "attach": """examples:
  torchtop attach 4242                 stack samples from outside; the job is not touched
  torchtop attach 4242 --for 60 --headless --format json
  torchtop attach 4242 --inject        load the agent for steps and profiler windows""",
    "tune": """examples:
  torchtop tune -- python train.py                  trials within 300 s; writes torchtop.toml
  torchtop tune --for 600 --allow batch-size -- python train.py
  torchtop run -- python train.py                   later runs apply torchtop.toml""",
    "watch": """examples:
  torchtop watch torchtop-runs/shared          a run folder several nodes' launchers share
  torchtop watch http://node1:9500 http://node2:9500 --token $TOKEN""",
    "view": """examples:
  torchtop view trace.json.gz
  torchtop view torchtop-runs/20261127-0149""",
    "diff": """examples:
  torchtop diff before.json.gz after.json.gz    two traces (or folders of ranks)
  torchtop diff torchtop-runs/0101 torchtop-runs/0102 --format markdown
  torchtop diff RUN/baseline RUN/trials/01/after-1     a tune trial: before, after
  torchtop diff yesterday-report.json today-report.json --format json""",
    "rules": """examples:
  torchtop rules                     the rule tree
  torchtop rules dataloader-starved  one rule: when it fires, why, its fixes""",
}
"""One example block per verb, shown at the end of its `--help`."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="torchtop",
        description="top for PyTorch training: where step time goes, the bottleneck, the fix.",
    )
    parser.add_argument(
        "--version", action=_VersionAction, help="show the installed version and exit"
    )
    verbs = _Verbs(parser.add_subparsers(dest="verb", metavar="VERB"))
    verbs.action.required = True

    analyze = verbs.add_parser(
        "analyze",
        aliases=["analyse"],
        help="analyse Kineto traces (a file or a folder of ranks) and name the bottleneck",
    )
    analyze.add_argument(
        "paths", nargs="+", metavar="PATH", help=".json / .json.gz trace or folder"
    )
    analyze.add_argument("--format", choices=("text", "json", "markdown"), default="text")
    analyze.add_argument(
        "--run",
        metavar="NAME",
        help="in a TensorBoard log folder of profiler traces (one run per sub-folder), the run "
        "to read (default: the newest, with a note naming the others)",
    )
    _segment_option(analyze)
    analyze.add_argument("--rules", metavar="DIR", help="rule folder (default: the shipped rules/)")
    _one_job_option(analyze)
    analyze.add_argument(
        "--color", choices=("auto", "always", "never"), default="auto", help="colour in text output"
    )
    analyze.add_argument(
        "--annotate",
        metavar="OUT.json[.gz]",
        help="also write the trace with torchtop's tracks added (steps, breakdown, findings) "
        "for Perfetto or chrome://tracing; several files: one OUT each, the rank in its name",
    )
    _cluster_option(analyze)

    run = verbs.add_parser(
        "run", help="launch a training command with the agent inside and watch it live"
    )
    _watch_options(run, for_help="stop the job after this long, then report")
    _serve_option(run)
    run.add_argument(
        "--config",
        metavar="FILE",
        help="a torchtop.toml to apply (default: ./torchtop.toml when present; tune writes it)",
    )
    run.add_argument(
        "--no-config", action="store_true", help="apply no torchtop.toml, even ./torchtop.toml"
    )
    run.add_argument("command", nargs=argparse.REMAINDER, metavar="-- COMMAND [ARG...]")

    demo = verbs.add_parser(
        "demo", help="run a small built-in CPU training job with a planted bottleneck, watched"
    )
    _watch_options(
        demo,
        for_help="stop the demo job after this long "
        f"(default with --headless: {DEMO_FOR_S:g}; the dashboard stays until q)",
    )
    _serve_option(demo)
    demo.add_argument(
        "job_args",
        nargs=argparse.REMAINDER,
        metavar="-- ARG...",
        help="options for the demo job (e.g. -- --num-workers 4)",
    )

    attach = verbs.add_parser(
        "attach", help="watch a running training process that torchtop did not start"
    )
    attach.add_argument("pid", type=int, metavar="PID")
    _watch_options(attach, for_help="stop watching after this long; the job goes on")
    attach.add_argument(
        "--inject",
        action="store_true",
        help="load torchtop's agent into the running job (gdb on Python 3.11-3.13, "
        "sys.remote_exec on 3.14+), so attach records steps and profiler windows as run does; "
        "it unloads when attach ends (docs/attach-inject.md)",
    )
    attach.add_argument(
        "--sample-budget",
        metavar="PERCENT",
        help="the native stack sampler's own CPU, in percent of one core, that its pace keeps "
        "under after a fast start (default 1)",
    )
    attach.add_argument(
        "--inject-timeout",
        metavar="SECONDS",
        help="how long --inject waits for the job's main thread to come back to Python "
        "(default 10)",
    )

    tune = verbs.add_parser(
        "tune", help="short trials in a loop: apply the best fix, relaunch, measure, keep or revert"
    )
    tune.add_argument(
        "--allow",
        metavar="GROUPS",
        help="also try fixes that can change convergence: batch-size,precision",
    )
    tune.add_argument(
        "--headless",
        action="store_true",
        help="accepted like run's: tune has no dashboard, so its progress always goes to stderr "
        "and its summary to stdout at the end",
    )
    # Checked in `_tune`, not by argparse, so a bad value is one line naming the option.
    tune.add_argument(
        "--for",
        "--budget",
        dest="for_s",
        metavar="SECONDS",
        help="time budget for the baseline and all trials (default 300); --budget is its older "
        "name: given both, the last one counts",
    )
    tune.add_argument(
        "--write", metavar="PATH", help="where torchtop.toml goes (default: ./torchtop.toml)"
    )
    tune.add_argument("--report", metavar="FILE", help="write the JSON report (with trials) here")
    tune.add_argument(
        "--run-dir",
        metavar="DIR",
        help="where the trials are recorded (default: ./torchtop-runs/<timestamp>)",
    )
    tune.add_argument("--rules", metavar="DIR", help="rule folder (default: the shipped rules/)")
    _tensorboard_option(tune)
    _format_option(tune, "the summary, or the JSON report (with trials), on stdout")
    tune.add_argument("command", nargs=argparse.REMAINDER, metavar="-- COMMAND [ARG...]")

    watch = verbs.add_parser(
        "watch", help="watch a run another process launched (a run folder shared by its nodes)"
    )
    watch.add_argument("targets", nargs="+", metavar="RUN_DIR|URL")
    _watch_options(watch, for_help="stop watching after this long; the run goes on")
    watch.add_argument(
        "--token",
        help="the bearer token of the nodes' --serve streams (default: TORCHTOP_SERVE_TOKEN)",
    )

    view = verbs.add_parser("view", help="the dashboard on saved traces or a recorded run folder")
    view.add_argument("paths", nargs="+", metavar="PATH", help="traces, a folder of them, or a run")
    view.add_argument("--rules", metavar="DIR", help="rule folder (default: the shipped rules/)")
    _one_job_option(view)
    _segment_option(view)

    diff = verbs.add_parser(
        "diff", help="compare two traces, run folders or JSON reports: what changed from A to B"
    )
    diff.add_argument("a", metavar="A", help="trace, folder of ranks, run folder or JSON report")
    diff.add_argument("b", metavar="B", help="the same kinds: compared with A (ratios are B/A)")
    diff.add_argument(
        "--format",
        choices=("text", "json", "markdown"),
        help="print the comparison (default: side by side in a terminal, else text)",
    )
    diff.add_argument("--rules", metavar="DIR", help="rule folder (default: the shipped rules/)")
    _cluster_option(diff)

    rules = verbs.add_parser("rules", help="list the rule tree, or show one rule")
    rules.add_argument("rule_id", nargs="?", metavar="ID")
    rules.add_argument("--rules", metavar="DIR", help="rule folder (default: the shipped rules/)")
    _format_option(rules, "the tree (or the rule) as text, or as JSON")
    return parser


class _Verbs:
    """The sub-command table: every verb's parser ends its help with the verb's examples."""

    def __init__(self, action: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
        self.action = action

    def add_parser(self, name: str, **kwargs: object) -> argparse.ArgumentParser:
        return self.action.add_parser(
            name,
            epilog=EXAMPLES.get(name),
            formatter_class=argparse.RawDescriptionHelpFormatter,
            **kwargs,  # type: ignore[arg-type]
        )

    def names(self) -> list[str]:
        return list(self.action.choices)


def unknown_verb(argv: Sequence[str], verbs: Sequence[str]) -> str | None:
    """One line for a first word that is no verb, with the nearest verb when one is close
    (`torchtop analyse` was once refused without a hint); None when the words parse."""
    word = next((w for w in argv if not w.startswith("-")), None)
    if word is None or word in verbs or word in VERB_ALIASES or argv[: argv.index(word)]:
        return None
    close = difflib.get_close_matches(word, verbs, n=1, cutoff=0.6)
    hint = f"; did you mean '{close[0]}'?" if close else f" (the verbs: {', '.join(verbs)})"
    return f"torchtop: '{word}' is not a verb{hint}"


class _VersionAction(argparse.Action):
    """`--version`: the installed distribution's version (what pip reports), so a wheel and its
    metadata never disagree; `__version__` in a source tree not installed. Looked up only when
    asked: importlib.metadata would cost every other command (analyze's start-up) its import."""

    def __init__(self, option_strings: Sequence[str], dest: str, help: str | None = None) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, help=help)

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: object,
        option_string: str | None = None,
    ) -> None:
        from importlib.metadata import PackageNotFoundError, version

        try:
            installed = version("torchtop")
        except PackageNotFoundError:
            from torchtop import __version__ as installed
        sys.stdout.write(f"torchtop {installed}\n")  # where argparse's own action prints it
        parser.exit()


def _one_job_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--one-job",
        action="store_true",
        help="read every trace given as ranks of one job, even traces that do not look like "
        "one (no rank recorded, different world sizes or GPUs, no step in common); by default "
        "such traces get one report each",
    )


def _cluster_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--cluster",
        metavar="ADDRESS",
        help="read and analyse each trace file as a task on the Dask cluster at ADDRESS "
        "(tcp://host:8786), or on N worker processes here with local[:N] "
        '(pip install "torchtop[cluster]")',
    )


def _segment_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--segment",
        type=int,
        metavar="N",
        help="in a run folder where fixes were tried, the job to read: 0 as started, N the job "
        "started again into RUN/jobs/NN (default: the job as it now runs)",
    )


def _format_option(parser: argparse.ArgumentParser, what: str) -> None:
    parser.add_argument("--format", choices=("text", "json"), default="text", help=what)


def _watch_options(parser: argparse.ArgumentParser, for_help: str, run_dir: bool = True) -> None:
    parser.add_argument("--headless", action="store_true", help="no dashboard; progress on stderr")
    parser.add_argument("--for", dest="for_s", metavar="SECONDS", help=for_help)
    _format_option(parser, "the final report on stdout as text, or as the JSON report")
    parser.add_argument("--report", metavar="FILE", help="write the JSON report here when done")
    if run_dir:
        parser.add_argument("--run-dir", metavar="DIR", help="where the run is recorded")
    parser.add_argument("--rules", metavar="DIR", help="rule folder (default: the shipped rules/)")
    parser.add_argument(
        "--metrics",
        metavar="[HOST:]PORT",
        help="serve Prometheus metrics of this node there (loopback unless HOST is given; "
        "another address needs the bearer token printed on start, or TORCHTOP_METRICS_TOKEN)",
    )
    _tensorboard_option(parser)


def _tensorboard_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--tensorboard",
        nargs="?",
        const="",
        metavar="DIR",
        help="write TensorBoard event files there as the run goes, and link its profiler "
        "windows for torch-tb-profiler (bare flag: RUN/tensorboard; docs/tensorboard.md)",
    )


def _serve_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--serve",
        metavar="[HOST:]PORT",
        help="serve this node's records there for `torchtop watch http://HOST:PORT` (loopback "
        "unless HOST is given; another address needs the bearer token printed on start, or "
        "TORCHTOP_SERVE_TOKEN)",
    )


def entry() -> NoReturn:
    """The `torchtop` command (and `python -m torchtop`): `main`, and after `analyze` an exit
    without Python's finalization, which spent ~35 ms tearing down numpy and the trace's
    objects after the report was out (7% of analysing the 35 MB sample)."""
    status = main()
    if sys.argv[1:2] in (["analyze"], ["analyse"]):
        _exit_now(status)
    raise SystemExit(status)


def _exit_now(status: int) -> NoReturn:
    """Flush what was written, stop what this process started, and end it at once."""
    parallel = sys.modules.get("torchtop.traces.parallel")
    if parallel is not None:
        parallel.discard_early_starts()  # what the atexit hook would have done
    for stream in (sys.stdout, sys.stderr):
        # A reader that went away (`| head`) gets no more: there is nothing more to say.
        with contextlib.suppress(BrokenPipeError, ValueError):
            stream.flush()
    os._exit(status)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    words = list(sys.argv[1:] if argv is None else argv)
    refused = unknown_verb(words, _verb_names(parser))
    if refused is not None:
        print(refused, file=sys.stderr)
        return EXIT_BAD_INPUT
    args = parser.parse_args(words)
    args.verb = VERB_ALIASES.get(args.verb, args.verb)
    try:
        if args.verb == "analyze":
            return _analyze(args)
        if args.verb == "rules":
            return _rules(args)
        if args.verb in ("run", "demo", "attach", "watch"):
            return _watch(args)
        if args.verb == "view":
            return _view(args)
        if args.verb == "tune":
            return _tune(args)
        if args.verb == "diff":
            from torchtop.sessions.diff import diff_session

            tree = _load_tree(args.rules)
            return diff_session(args.a, args.b, args.format, tree, args.cluster)
    except InputError as exc:
        print(f"torchtop: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except BrokenPipeError:
        return EXIT_OK
    return EXIT_BAD_INPUT


def _verb_names(parser: argparse.ArgumentParser) -> list[str]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return [name for name in action.choices if name not in VERB_ALIASES]
    return []


def _load_tree(folder: str | None):  # type: ignore[no-untyped-def]
    from torchtop.diagnosis.rules import RuleError, load_rules

    try:
        return load_rules(Path(folder) if folder else None)
    except RuleError as exc:
        raise InputError("rules", str(exc)) from None


def _check_frame_patterns() -> None:
    """attach reads native stacks through rules/_frames.toml: a bad file stops it up front."""
    from torchtop.diagnosis.frames import load_frame_patterns
    from torchtop.diagnosis.rules import RuleError

    try:
        load_frame_patterns()
    except RuleError as exc:
        raise InputError("rules", str(exc)) from None


def _analyze(args: argparse.Namespace) -> int:
    # The analysis never multiplies matrices: a BLAS thread pool would only take CPU from the
    # reader's worker (and from a training job beside it); OpenBLAS's start-up alone burns
    # ~130 ms of a second core. Set before numpy is imported, here and in the worker, and
    # restored after, for whatever this process runs next (tests call `main` in process).
    saved = {name: os.environ.get(name) for name in BLAS_THREAD_VARIABLES}
    for name, value in saved.items():
        if value is None:
            os.environ[name] = "1"
    try:
        return _analyze_paths(args)
    except KeyboardInterrupt:  # Ctrl-C on a long read: a word, not a traceback
        print("torchtop: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    finally:
        # An early start nobody took (a bad `--annotate` path, bad rules: refused before the
        # read) is stopped now, not at exit: `main` may be called again in this process.
        parallel = sys.modules.get("torchtop.traces.parallel")
        if parallel is not None:
            parallel.discard_early_starts()
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)


def _analyze_paths(args: argparse.Namespace) -> int:
    from torchtop.traces.parallel import start_early

    if args.cluster is None:  # a big trace starts being read while the analysis is imported
        start_early(args.paths)
    elif args.annotate is not None:
        raise InputError("--cluster", "not with --annotate (each copy is written here)")
    from torchtop.cluster import trace_reader
    from torchtop.report.jobs import render_jobs

    tree = _load_tree(args.rules)
    with _file_progress() as progress, trace_reader(args.cluster) as reader:
        jobs = _analyze_or_annotate(args, tree, progress, reader)
    _warn_damaged(jobs)
    sys.stdout.write(render_jobs(jobs, args.format, colour=_colour(args.color)))
    return EXIT_OK


def _warn_damaged(jobs: JobReports) -> None:
    """The reports carry these too; stderr makes sure a damaged or skipped file is never
    missed."""
    for skipped in jobs.skipped:
        print(f"torchtop: {skipped.note()}", file=sys.stderr)
    for report in jobs.reports:
        for info in report.job.infos:
            if info.truncated:
                print(f"torchtop: {info.path}: {info.truncation()}", file=sys.stderr)


@contextlib.contextmanager
def _file_progress() -> Iterator[Callable[[Path], Callable[[int, int], None] | None]]:
    """A progress bar on stderr for each trace file that takes over a second to read (on a
    terminal): `analyze`'s, and `view`'s before its dashboard opens."""
    from torchtop.progress import FileProgress, progress_enabled

    bars: list[FileProgress] = []

    def progress(path: Path) -> FileProgress | None:
        for bar in bars:
            bar.close()
        bars.clear()
        if not progress_enabled():
            return None
        bars.append(FileProgress(path))
        return bars[-1]

    try:
        yield progress
    finally:
        for bar in bars:
            bar.close()


def _analyze_or_annotate(args: argparse.Namespace, tree, progress, reader):  # type: ignore[no-untyped-def]
    if args.annotate is None:
        from torchtop.sessions.offline import analyze_jobs

        return analyze_jobs(
            args.paths, tree, progress, args.run, args.one_job, args.segment, reader
        )[0]
    from torchtop.model.report import JobReports
    from torchtop.sessions.annotated import annotate_paths

    report, written = annotate_paths(args.paths, Path(args.annotate), tree, progress)
    for path in written:
        print(
            f"torchtop: annotated trace written to {path} (open it in ui.perfetto.dev "
            "or chrome://tracing)",
            file=sys.stderr,
        )
    return JobReports((report,))


def _tune(args: argparse.Namespace) -> int:
    from torchtop.sessions.tune import TuneCommand, parse_allow, parse_budget, tune_session

    options = TuneCommand(
        allow=parse_allow(args.allow),
        budget_s=parse_budget(args.for_s),
        write=Path(args.write) if args.write else None,
        run_dir=Path(args.run_dir) if args.run_dir else None,
        report=args.report,
        tensorboard=args.tensorboard,
        output_format=args.format,
    )
    return tune_session(_after_dashes(args.command), options, _load_tree(args.rules))


def _view(args: argparse.Namespace) -> int:
    from torchtop.report.jobs import job_name
    from torchtop.sessions.offline import analyze_jobs
    from torchtop.tui.app import run_view

    tree = _load_tree(args.rules)
    with _file_progress() as progress:  # a big trace is read before the dashboard opens
        jobs, state = analyze_jobs(
            args.paths, tree, progress, one_job=args.one_job, segment=args.segment
        )
    _warn_damaged(jobs)
    if not _on_a_terminal("view"):
        from torchtop.report.jobs import render_jobs_text

        sys.stdout.write(render_jobs_text(jobs))
        return EXIT_OK
    if len(jobs.reports) == 1:
        run_view(jobs.reports[0], state)
        return EXIT_OK
    # Traces that are not one job: the first, said so on screen and after.
    note = (
        f"the traces are {len(jobs.reports)} jobs, not one: showed the first, "
        f"{job_name(jobs.reports[0])}; `torchtop analyze` reports each, `torchtop view FILE` "
        "shows another"
    )
    run_view(jobs.reports[0], state, aside=f"job 1 of {len(jobs.reports)}")
    print(f"torchtop: {note}", file=sys.stderr)
    return EXIT_OK


def _on_a_terminal(verb: str) -> bool:
    """Whether stdout is a terminal the dashboard can draw on; where it is not (a file, a
    pipe), the verb runs headless, as `top -b` does, and says so on stderr."""
    if sys.stdout.isatty():
        return True
    what = "the report" if verb == "view" else "progress on stderr, the report"
    print(
        f"torchtop: stdout is not a terminal: {verb} runs headless ({what} on stdout)",
        file=sys.stderr,
    )
    return False


def _watch(args: argparse.Namespace) -> int:
    from torchtop.sessions.watch_options import WatchOptions
    from torchtop.sessions.watching import run_session

    tree = _load_tree(args.rules)
    # Bad input is refused in its one line before anything is said or started: the options
    # first, then the process to attach to.
    if args.verb == "attach" and not args.inject:
        _check_frame_patterns()
    for_s = None if args.for_s is None else positive_seconds("--for", args.for_s)
    if args.verb == "attach":
        _check_attach_target(args)
    headless = args.headless or not _on_a_terminal(args.verb)
    if for_s is None and args.verb == "demo" and headless:
        for_s = DEMO_FOR_S  # nobody is there to press q
    options = WatchOptions(
        headless=headless,
        for_s=for_s,
        report=args.report,
        run_dir=Path(args.run_dir) if getattr(args, "run_dir", None) else None,
        metrics=getattr(args, "metrics", None),
        serve=getattr(args, "serve", None),
        token=getattr(args, "token", None),
        tensorboard=args.tensorboard,
        output_format=args.format,
    )
    if args.verb == "watch":
        from torchtop.sessions.watching import watch_session

        return watch_session(args.targets, options, tree)
    if args.verb == "attach" and args.inject:
        from torchtop.attach.inject import ACK_TIMEOUT_S
        from torchtop.sessions.injecting import inject_session

        wait_s = args.inject_timeout
        timeout_s = ACK_TIMEOUT_S if wait_s is None else float(wait_s)  # checked up front
        return inject_session(args.pid, options, tree, timeout_s)
    if args.verb == "attach":
        from torchtop.sessions.watching import attach_session

        budget = args.sample_budget
        if budget is not None:
            options = dataclasses.replace(
                options, sample_budget_share=percent("--sample-budget", budget)
            )
        return attach_session(args.pid, options, tree)
    if args.verb == "demo":
        command = [sys.executable, "-m", "torchtop.demo.train", *_after_dashes(args.job_args)]
    else:
        from torchtop.sessions.run_config import resolve_config

        config = resolve_config(
            args.config, args.no_config, _after_dashes(args.command), Path.cwd()
        )
        return run_session(list(config.command), options, tree, kind=args.verb, config=config)
    return run_session(command, options, tree, kind=args.verb)


def _check_attach_target(args: argparse.Namespace) -> None:
    """attach's own options, then the process, each refused in one line before anything is
    said of the terminal or started."""
    if args.inject:
        from torchtop.sessions.injecting import inject_target

        if args.inject_timeout is not None:
            positive_seconds("--inject-timeout", args.inject_timeout)
        inject_target(args.pid)
    else:
        from torchtop.attach.attach import check_target

        check_target(args.pid)


def _after_dashes(words: list[str]) -> list[str]:
    return words[1:] if words and words[0] == "--" else list(words)


def _colour(choice: str) -> bool:
    if choice == "always":
        return True
    if choice == "never" or os.environ.get("NO_COLOR"):
        return False
    return sys.stdout.isatty()


def _rules(args: argparse.Namespace) -> int:
    from torchtop.diagnosis.describe import describe_rule, describe_tree, rule_json, tree_json

    tree = _load_tree(args.rules)
    as_json = args.format == "json"
    if args.rule_id is None:
        sys.stdout.write(_json(tree_json(tree)) if as_json else describe_tree(tree))
        return EXIT_OK
    if args.rule_id not in tree.rules:
        raise InputError(
            args.rule_id, f"no such rule (see `torchtop rules`; {len(tree.rules)} rules)"
        )
    rule = args.rule_id
    sys.stdout.write(_json(rule_json(tree, rule)) if as_json else describe_rule(tree, rule))
    return EXIT_OK


def _json(document: object) -> str:
    return json.dumps(document, indent=2) + "\n"


if __name__ == "__main__":
    raise SystemExit(main())
