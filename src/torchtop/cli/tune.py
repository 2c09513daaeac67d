"""`torchtop tune -- COMMAND`: its options, and the advisor's loop of trials
(`sessions.tune`)."""

from __future__ import annotations

import argparse
from pathlib import Path

from torchtop.cli.options import (
    Verbs,
    command_argument,
    format_option,
    rules_option,
    tensorboard_option,
)
from torchtop.cli.shared import after_dashes, load_tree

EXAMPLES = """examples:
  torchtop tune -- python train.py                  trials within 300 s; writes torchtop.toml
  torchtop tune --for 600 --allow batch-size -- python train.py
  torchtop run -- python train.py                   later runs apply torchtop.toml"""


def register(verbs: Verbs) -> None:
    tune = verbs.add_parser(
        "tune",
        tune_command,
        EXAMPLES,
        help="short trials in a loop: apply the best fix, relaunch, measure, keep or revert",
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
    # Checked in `tune_command`, not by argparse, so a bad value is one line naming the option.
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
    rules_option(tune)
    tensorboard_option(tune)
    format_option(tune, "the summary, or the JSON report (with trials), on stdout")
    command_argument(tune)


def tune_command(args: argparse.Namespace) -> int:
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
    return tune_session(after_dashes(args.command), options, load_tree(args.rules))
