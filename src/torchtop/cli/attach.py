"""`torchtop attach PID`: its options, and a running job watched from outside
(`sessions.watching.attach_session`) or with the agent loaded into it (`--inject`,
`sessions.injecting`). Bad input is refused in its one line before anything is said or
started: the options first, then the process to attach to."""

from __future__ import annotations

import argparse
import dataclasses

from torchtop.cli.live import for_seconds, watch_settings
from torchtop.cli.options import Verbs, watch_options
from torchtop.cli.shared import load_tree
from torchtop.errors import InputError, percent, positive_seconds

EXAMPLES = """examples:
  torchtop attach 4242                 stack samples from outside; the job is not touched
  torchtop attach 4242 --for 60 --headless --format json
  torchtop attach 4242 --inject        load the agent for steps and profiler windows"""


def register(verbs: Verbs) -> None:
    attach = verbs.add_parser(
        "attach",
        attach_command,
        EXAMPLES,
        help="watch a running training process that torchtop did not start",
    )
    attach.add_argument("pid", type=int, metavar="PID")
    watch_options(attach, for_help="stop watching after this long; the job goes on")
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


def attach_command(args: argparse.Namespace) -> int:
    tree = load_tree(args.rules)
    if not args.inject:
        _check_frame_patterns()
    for_s = for_seconds(args)
    _check_target(args)
    options = watch_settings(args, for_s)
    if args.inject:
        from torchtop.attach.inject import ACK_TIMEOUT_S
        from torchtop.sessions.injecting import inject_session

        wait_s = args.inject_timeout
        timeout_s = ACK_TIMEOUT_S if wait_s is None else float(wait_s)  # checked up front
        return inject_session(args.pid, options, tree, timeout_s)
    from torchtop.sessions.watching import attach_session

    if args.sample_budget is not None:
        share = percent("--sample-budget", args.sample_budget)
        options = dataclasses.replace(options, sample_budget_share=share)
    return attach_session(args.pid, options, tree)


def _check_frame_patterns() -> None:
    """attach reads native stacks through rules/_frames.toml: a bad file stops it up front."""
    from torchtop.diagnosis.frames import load_frame_patterns
    from torchtop.diagnosis.rules import RuleError

    try:
        load_frame_patterns()
    except RuleError as exc:
        raise InputError("rules", str(exc)) from None


def _check_target(args: argparse.Namespace) -> None:
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
