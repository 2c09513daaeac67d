"""`torchtop run -- COMMAND` and `torchtop demo`: their options, and the job launched and
watched (`sessions.watching.run_session`); `run` with the `torchtop.toml` that applies
(`sessions.run_config`)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from torchtop.cli.live import for_seconds, watch_settings
from torchtop.cli.options import Verbs, command_argument, serve_option, watch_options
from torchtop.cli.shared import after_dashes, load_tree

DEMO_FOR_S = 30.0
"""`demo --headless` stops after this long unless `--for` says otherwise; its dashboard stays
until `q`."""
RUN_EXAMPLES = """examples:
  torchtop run -- python train.py --lr 3e-4
  torchtop run --headless --for 120 --report r.json -- torchrun --nproc_per_node 8 train.py
  torchtop run --metrics 9400 -- python train.py  (Prometheus on 127.0.0.1:9400)"""
DEMO_EXAMPLES = """examples:
  torchtop demo                       the dashboard; `a` tries the fix, `q` quits
  torchtop demo --headless --for 20   progress on stderr, the report at the end
  torchtop demo -- --num-workers 4    the demo job with other options"""


def register_run(verbs: Verbs) -> None:
    run = verbs.add_parser(
        "run",
        run_command,
        RUN_EXAMPLES,
        help="launch a training command with the agent inside and watch it live",
    )
    watch_options(run, for_help="stop the job after this long, then report")
    serve_option(run)
    run.add_argument(
        "--config",
        metavar="FILE",
        help="a torchtop.toml to apply, whatever command it was tuned for (default: "
        "./torchtop.toml when it was tuned for this command; tune writes it)",
    )
    run.add_argument(
        "--no-config", action="store_true", help="apply no torchtop.toml, even ./torchtop.toml"
    )
    command_argument(run)


def register_demo(verbs: Verbs) -> None:
    demo = verbs.add_parser(
        "demo",
        demo_command,
        DEMO_EXAMPLES,
        help="run a small built-in CPU training job with a planted bottleneck, watched",
    )
    watch_options(
        demo,
        for_help="stop the demo job after this long "
        f"(default with --headless: {DEMO_FOR_S:g}; the dashboard stays until q)",
    )
    serve_option(demo)
    demo.add_argument(
        "job_args",
        nargs=argparse.REMAINDER,
        metavar="-- ARG...",
        help="options for the demo job (e.g. -- --num-workers 4)",
    )


def run_command(args: argparse.Namespace) -> int:
    from torchtop.sessions.run_config import resolve_config
    from torchtop.sessions.watching import run_session

    tree = load_tree(args.rules)
    options = watch_settings(args, for_seconds(args))
    command = after_dashes(args.command)
    config = resolve_config(args.config, args.no_config, command, Path.cwd())
    return run_session(list(config.command), options, tree, kind="run", config=config)


def demo_command(args: argparse.Namespace) -> int:
    from torchtop.sessions.watching import run_session

    tree = load_tree(args.rules)
    options = watch_settings(args, for_seconds(args), headless_for_s=DEMO_FOR_S)
    command = [sys.executable, "-m", "torchtop.demo.train", *after_dashes(args.job_args)]
    return run_session(command, options, tree, kind="demo")
