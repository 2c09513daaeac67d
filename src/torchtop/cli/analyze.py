"""`torchtop analyze PATH...`: its options, and the offline report on saved traces or a run
folder, or the traces written back with torchtop's tracks: `torchtop.analyze`, printed."""

from __future__ import annotations

import argparse
import os
import sys

from torchtop.cli.options import Verbs, cluster_option, one_job_option, rules_option, segment_option
from torchtop.cli.shared import EXIT_OK, file_progress, load_tree, warn_damaged
from torchtop.errors import EXIT_INTERRUPTED

BLAS_THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
EXAMPLES = """examples:
  torchtop analyze trace.json.gz               one Kineto trace
  torchtop analyze traces/                     a folder of them, one per rank
  torchtop analyze torchtop-runs/20261127-0149 a run recorded by `torchtop run`
  torchtop analyze trace.json --format json > report.json
  torchtop analyze /shared/traces --cluster tcp://host:8786   each rank a task on a Dask cluster"""


def register(verbs: Verbs) -> None:
    analyze = verbs.add_parser(
        "analyze",
        analyze_command,
        EXAMPLES,
        aliases=["analyse"],
        help="analyse Kineto traces (a file or a folder of ranks) and name the bottleneck",
    )
    analyze.add_argument(
        "paths", nargs="+", metavar="PATH", help=".json / .json.gz trace or folder"
    )
    analyze.add_argument(
        "--format",
        choices=("text", "json", "markdown"),
        default="text",
        help="the report as text, as the JSON report, or as Markdown",
    )
    analyze.add_argument(
        "--run",
        metavar="NAME",
        help="in a TensorBoard log folder of profiler traces (one run per sub-folder), the run "
        "to read (default: the newest, with a note naming the others)",
    )
    segment_option(analyze)
    rules_option(analyze)
    one_job_option(analyze)
    analyze.add_argument(
        "--color", choices=("auto", "always", "never"), default="auto", help="colour in text output"
    )
    analyze.add_argument(
        "--annotate",
        metavar="OUT.json[.gz]",
        help="also write the trace with torchtop's tracks added (steps, breakdown, findings) "
        "for Perfetto or chrome://tracing; several files: one OUT each, the rank in its name",
    )
    cluster_option(analyze)


def analyze_command(args: argparse.Namespace) -> int:
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
    from torchtop.api.analyzing import analyze

    tree = load_tree(args.rules)
    with file_progress() as progress:
        report = analyze(
            args.paths,
            rules=tree,
            run=args.run,
            segment=args.segment,
            one_job=args.one_job,
            cluster=args.cluster,
            annotate=args.annotate,
            progress=progress,
        )
    for path in report.annotated:
        print(
            f"torchtop: annotated trace written to {path} (open it in ui.perfetto.dev "
            "or chrome://tracing)",
            file=sys.stderr,
        )
    assert report.model is not None  # analysed here, not read from JSON
    warn_damaged(report.model)
    sys.stdout.write(report.render(args.format, colour=_colour(args.color)))
    return EXIT_OK


def _colour(choice: str) -> bool:
    if choice == "always":
        return True
    if choice == "never" or os.environ.get("NO_COLOR"):
        return False
    return sys.stdout.isatty()
