"""What the verbs that watch a job live (`run`, `demo`, `attach`, `watch`) do alike once their
words parse: `--for` checked, the terminal looked at, and the one `WatchOptions` value that
their sessions take."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from torchtop.cli.shared import on_a_terminal
from torchtop.errors import positive_seconds

if TYPE_CHECKING:
    from torchtop.sessions.watch_options import WatchOptions


def for_seconds(args: argparse.Namespace) -> float | None:
    """`--for`, refused in one line when it is not a positive number of seconds."""
    return None if args.for_s is None else positive_seconds("--for", args.for_s)


def watch_settings(
    args: argparse.Namespace, for_s: float | None, headless_for_s: float | None = None
) -> WatchOptions:
    """The options the session reads. Without a terminal the verb runs headless (and says so);
    `headless_for_s`: the `--for` a headless run takes when none was given (nobody is there
    to press q)."""
    from torchtop.sessions.watch_options import WatchOptions

    headless = args.headless or not on_a_terminal(args.verb)
    if for_s is None and headless:
        for_s = headless_for_s
    return WatchOptions(
        headless=headless,
        for_s=for_s,
        report=args.report,
        run_dir=Path(args.run_dir) if args.run_dir else None,
        metrics=args.metrics,
        serve=getattr(args, "serve", None),
        token=getattr(args, "token", None),
        tensorboard=args.tensorboard,
        output_format=args.format,
    )
