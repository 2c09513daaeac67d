"""`torchtop watch RUN_DIR|URL...`: its options, and a run another process launched followed
live (`sessions.watching.watch_session`)."""

from __future__ import annotations

import argparse

from torchtop.cli.live import for_seconds, watch_settings
from torchtop.cli.options import Verbs, watch_options
from torchtop.cli.shared import load_tree

EXAMPLES = """examples:
  torchtop watch torchtop-runs/shared          a run folder several nodes' launchers share
  torchtop watch http://node1:9500 http://node2:9500 --token $TOKEN"""


def register(verbs: Verbs) -> None:
    watch = verbs.add_parser(
        "watch",
        watch_command,
        EXAMPLES,
        help="watch a run another process launched (a run folder shared by its nodes)",
    )
    watch.add_argument("targets", nargs="+", metavar="RUN_DIR|URL")
    watch_options(watch, for_help="stop watching after this long; the run goes on")
    watch.add_argument(
        "--token",
        help="the bearer token of the nodes' --serve streams (default: TORCHTOP_SERVE_TOKEN)",
    )


def watch_command(args: argparse.Namespace) -> int:
    from torchtop.sessions.watching import watch_session

    tree = load_tree(args.rules)
    options = watch_settings(args, for_seconds(args))
    return watch_session(args.targets, options, tree)
