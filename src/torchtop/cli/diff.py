"""`torchtop diff A B`: its options, and what changed from A to B (`torchtop.diff`), side by
side in a terminal (`tui.diffscreen`)."""

from __future__ import annotations

import argparse
import sys

from torchtop.cli.options import Verbs, cluster_option, rules_option
from torchtop.cli.shared import EXIT_OK, load_tree

EXAMPLES = """examples:
  torchtop diff before.json.gz after.json.gz    two traces (or folders of ranks)
  torchtop diff torchtop-runs/0101 torchtop-runs/0102 --format markdown
  torchtop diff RUN/baseline RUN/trials/01/after-1     a tune trial: before, after
  torchtop diff yesterday-report.json today-report.json --format json"""


def register(verbs: Verbs) -> None:
    diff = verbs.add_parser(
        "diff",
        diff_command,
        EXAMPLES,
        help="compare two traces, run folders or JSON reports: what changed from A to B",
    )
    diff.add_argument("a", metavar="A", help="trace, folder of ranks, run folder or JSON report")
    diff.add_argument("b", metavar="B", help="the same kinds: compared with A (ratios are B/A)")
    diff.add_argument(
        "--format",
        choices=("text", "json", "markdown"),
        help="print the comparison (default: side by side in a terminal, else text)",
    )
    rules_option(diff)
    cluster_option(diff)


def diff_command(args: argparse.Namespace) -> int:
    from torchtop.api.diffing import diff

    comparison = diff(args.a, args.b, rules=load_tree(args.rules), cluster=args.cluster)
    if args.format is None and sys.stdout.isatty():
        from torchtop.tui.diffscreen import run_diff

        run_diff(comparison.changes)
        return EXIT_OK
    sys.stdout.write(comparison.render(args.format or "text"))
    return EXIT_OK
