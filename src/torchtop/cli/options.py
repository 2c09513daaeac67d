"""What several verbs' parsers share: the sub-command table and the options more than one verb
takes, each written once so that the same option reads the same in every verb's `--help`.

A verb's own options live beside its session call, in its module of this package (`analyze`,
`running`, `attach`, `watch`, `tune`, `view`, `diff`, `rules`); each has a `register(verbs)`.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

Handler = Callable[[argparse.Namespace], int]
"""What a verb runs once its words parse: the exit status."""


class Verbs:
    """The sub-command table: every verb's parser ends its help with the verb's examples, and
    names the function that runs it (`handler`, read by `cli.main`)."""

    def __init__(self, action: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
        self.action = action

    def add_parser(
        self, name: str, handler: Handler, examples: str, **kwargs: object
    ) -> argparse.ArgumentParser:
        parser = self.action.add_parser(
            name,
            epilog=examples,
            formatter_class=argparse.RawDescriptionHelpFormatter,
            **kwargs,  # type: ignore[arg-type]
        )
        parser.set_defaults(handler=handler)
        return parser

    def names(self) -> list[str]:
        return list(self.action.choices)


def rules_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--rules", metavar="DIR", help="rule folder (default: the shipped rules/)")


def one_job_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--one-job",
        action="store_true",
        help="read every trace given as ranks of one job, even traces that do not look like "
        "one (no rank recorded, different world sizes or GPUs, no step in common); by default "
        "such traces get one report each",
    )


def cluster_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--cluster",
        metavar="ADDRESS",
        help="read and analyse each trace file as a task on the Dask cluster at ADDRESS "
        "(tcp://host:8786), or on N worker processes here with local[:N] "
        '(pip install "torchtop[cluster]")',
    )


def segment_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--segment",
        type=int,
        metavar="N",
        help="in a run folder where fixes were tried, the job to read: 0 as started, N the job "
        "started again into RUN/jobs/NN (default: the job as it now runs)",
    )


def format_option(parser: argparse.ArgumentParser, what: str) -> None:
    parser.add_argument("--format", choices=("text", "json"), default="text", help=what)


def watch_options(parser: argparse.ArgumentParser, for_help: str) -> None:
    """The options of the verbs that watch a job live (`run`, `demo`, `attach`, `watch`)."""
    parser.add_argument("--headless", action="store_true", help="no dashboard; progress on stderr")
    parser.add_argument("--for", dest="for_s", metavar="SECONDS", help=for_help)
    format_option(parser, "the final report on stdout as text, or as the JSON report")
    parser.add_argument("--report", metavar="FILE", help="write the JSON report here when done")
    parser.add_argument("--run-dir", metavar="DIR", help="where the run is recorded")
    rules_option(parser)
    parser.add_argument(
        "--metrics",
        metavar="[HOST:]PORT",
        help="serve Prometheus metrics of this node there (loopback unless HOST is given; "
        "another address needs the bearer token printed on start, or TORCHTOP_METRICS_TOKEN)",
    )
    tensorboard_option(parser)


def tensorboard_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--tensorboard",
        nargs="?",
        const="",
        metavar="DIR",
        help="write TensorBoard event files there as the run goes, and link its profiler "
        "windows for torch-tb-profiler (bare flag: RUN/tensorboard; docs/tensorboard.md)",
    )


def serve_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--serve",
        metavar="[HOST:]PORT",
        help="serve this node's records there for `torchtop watch http://HOST:PORT` (loopback "
        "unless HOST is given; another address needs the bearer token printed on start, or "
        "TORCHTOP_SERVE_TOKEN)",
    )


def command_argument(parser: argparse.ArgumentParser) -> None:
    """The training command after `--` (`run`, `tune`)."""
    parser.add_argument("command", nargs=argparse.REMAINDER, metavar="-- COMMAND [ARG...]")
