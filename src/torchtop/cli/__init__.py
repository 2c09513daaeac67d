"""The verbs of CONTRACT.md; argument parsing and exit statuses only.

Each verb's options and the call into its session live together, one module per verb in this
package (`register(verbs)` adds the verb's parser and names the function that runs it); the
options several verbs share are in `options`. Bad input (a missing path, an unreadable trace,
an invalid rule file) exits with status 2 and one line on stderr naming the input; no
traceback reaches the user.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Callable, Sequence
from typing import NoReturn

from torchtop.cli import analyze, attach, diff, rules, running, tune, view, watch
from torchtop.cli.analyze import BLAS_THREAD_VARIABLES
from torchtop.cli.options import Verbs
from torchtop.cli.running import DEMO_FOR_S
from torchtop.cli.shared import EXIT_BAD_INPUT, EXIT_OK
from torchtop.errors import InputError

__all__ = ["BLAS_THREAD_VARIABLES", "DEMO_FOR_S", "EXIT_BAD_INPUT", "EXIT_OK", "entry", "main"]

VERB_ALIASES = {"analyse": "analyze"}
"""Other spellings a verb answers to (the help's own British spelling among them)."""
REGISTERS: tuple[Callable[[Verbs], None], ...] = (
    analyze.register,
    running.register_run,
    running.register_demo,
    attach.register,
    tune.register,
    watch.register,
    view.register,
    diff.register,
    rules.register,
)
"""Every verb, in the order `torchtop --help` lists them."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="torchtop",
        description="top for PyTorch training: where step time goes, the bottleneck, the fix.",
    )
    parser.add_argument(
        "--version", action=_VersionAction, help="show the installed version and exit"
    )
    verbs = Verbs(parser.add_subparsers(dest="verb", metavar="VERB"))
    verbs.action.required = True
    for register in REGISTERS:
        register(verbs)
    return parser


def unknown_verb(argv: Sequence[str], verbs: Sequence[str]) -> str | None:
    """One line for a first word that is no verb, with the nearest verb when one is close
    (`torchtop analyse` was once refused without a hint); None when the words parse."""
    word = next((w for w in argv if not w.startswith("-")), None)
    if word is None or word in verbs or word in VERB_ALIASES or argv[: argv.index(word)]:
        return None
    import difflib  # only for a mistyped verb

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
    handler: Callable[[argparse.Namespace], int] = args.handler
    try:
        return handler(args)
    except InputError as exc:
        print(f"torchtop: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except BrokenPipeError:
        return EXIT_OK


def _verb_names(parser: argparse.ArgumentParser) -> list[str]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return [name for name in action.choices if name not in VERB_ALIASES]
    return []


if __name__ == "__main__":
    raise SystemExit(main())
