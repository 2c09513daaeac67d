"""The script's command-line options, seen through its own argparse parser.

To relaunch a job with a fix applied as `--num-workers 8`, torchtop must know which options the
script has and what they were set to. `install()` wraps `ArgumentParser.parse_known_args` (which
`parse_args` goes through) and records every option of a parse that reads `sys.argv`: that is
the script's own command line, while a library parsing a list it built itself passes `args`
and is left alone. Stdlib only: the bootstrap installs it as soon as the job imports argparse,
which may be before torch.
"""

from __future__ import annotations

import argparse
import functools
from collections.abc import Sequence
from typing import Any

_SKIPPED = (argparse._HelpAction, argparse._VersionAction, argparse._SubParsersAction)
_BOOLEAN = (argparse._StoreTrueAction, argparse._StoreFalseAction)

_options: dict[tuple[tuple[str, ...], str], dict[str, Any]] = {}


def seen_options() -> list[dict[str, Any]]:
    """`{flags, dest, type, default, value}` for each option parsed from sys.argv so far."""
    return [dict(option) for option in _options.values()]


def install(module: Any = argparse) -> None:
    parser_class = module.ArgumentParser
    original = parser_class.parse_known_args
    if getattr(original, "__torchtop__", False):
        return

    @functools.wraps(original)
    def parse_known_args(
        self: argparse.ArgumentParser,
        args: Sequence[str] | None = None,
        namespace: argparse.Namespace | None = None,
    ) -> tuple[argparse.Namespace, list[str]]:
        result: tuple[argparse.Namespace, list[str]] = original(self, args, namespace)
        if args is None:
            _record(self, result[0])
        return result

    parse_known_args.__torchtop__ = True  # type: ignore[attr-defined]
    parser_class.parse_known_args = parse_known_args


def _record(parser: argparse.ArgumentParser, parsed: argparse.Namespace) -> None:
    try:
        for action in parser._actions:
            if not isinstance(action, _SKIPPED):
                key = (tuple(action.option_strings), action.dest)
                _options[key] = describe_action(action, parsed)
    except Exception:  # the agent never breaks the script's own parsing
        return


def describe_action(action: argparse.Action, parsed: argparse.Namespace) -> dict[str, Any]:
    return {
        "flags": list(action.option_strings),
        "dest": action.dest,
        "type": type_name(action),
        "default": action.default,
        "value": getattr(parsed, action.dest, None),
    }


def type_name(action: argparse.Action) -> str | None:
    if action.type is not None:
        return getattr(action.type, "__name__", type(action.type).__name__)
    if isinstance(action, _BOOLEAN):
        return "bool"
    if isinstance(action, argparse._CountAction):
        return "int"
    if isinstance(action, (argparse._StoreAction, argparse._AppendAction)):
        return "str"
    return None
