"""The script's command-line options, seen through its own argparse parser.

To relaunch a job with a fix applied as `--num-workers 8`, torchtop must know which options the
script has and what they were set to. `install()` wraps `ArgumentParser.parse_known_args` (which
`parse_args` goes through) and records every option of a parse that reads `sys.argv`: that is
the script's own command line, while a library parsing a list it built itself passes `args`
and is left alone. Parsers that bypass `parse_known_args` (jsonargparse, under LightningCLI) still
go through argparse's `_parse_known_args`: there an option list that is the tail of sys.argv (a
subcommand's, such as `fit --data.num_workers 2`) is the script's own too.
Stdlib only: the bootstrap installs it as soon as the job imports argparse,
which may be before torch.

An agent injected into a running job (`attach --inject`) comes after the parse: `recover()`
finds the parsers still alive in the job's memory and parses sys.argv again with each, quietly
(a parse that fails is left alone, and one holding a `FileType` option is not run again: it
would open files). A parser that recognises some of sys.argv is the script's; with no
arguments, a lone parser is (its defaults are the values).
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import gc
import io
import sys
from collections.abc import Sequence
from typing import Any

_SKIPPED = (argparse._HelpAction, argparse._VersionAction, argparse._SubParsersAction)
_BOOLEAN = (argparse._StoreTrueAction, argparse._StoreFalseAction)

_options: dict[tuple[tuple[str, ...], str], dict[str, Any]] = {}


def seen_options() -> list[dict[str, Any]]:
    """`{flags, dest, type, default, value}` for each option parsed from sys.argv so far."""
    return [dict(option) for option in _options.values()]


def recover() -> int:
    """Record the options of the parsers that already parsed sys.argv (see the module's
    docstring); how many parsers were recorded."""
    # type(), not isinstance(): isinstance reads `__class__`, which a lazy module attribute
    # (torch's deprecated ones) answers with a warning on the job's stderr.
    parsers = [o for o in gc.get_objects() if issubclass(type(o), argparse.ArgumentParser)]
    parsers = [
        p for p in parsers if not any(isinstance(a.type, argparse.FileType) for a in p._actions)
    ]
    argv = sys.argv[1:]
    recorded = 0
    for parser in parsers:
        parsed = _quiet_parse(parser, argv)
        if parsed is None:
            continue
        namespace, unknown = parsed
        if (argv and len(unknown) < len(argv)) or (not argv and len(parsers) == 1):
            _record(parser, namespace)
            recorded += 1
    return recorded


def _quiet_parse(
    parser: argparse.ArgumentParser, argv: list[str]
) -> tuple[argparse.Namespace, list[str]] | None:
    try:
        with contextlib.redirect_stderr(io.StringIO()), contextlib.redirect_stdout(io.StringIO()):
            namespace, unknown = argparse.ArgumentParser.parse_known_args(parser, argv)
    except (Exception, SystemExit):  # the job's parser, not ours: any failure is a skip
        return None
    return namespace, list(unknown)


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
    _install_inner(parser_class)


def _install_inner(parser_class: Any) -> None:
    original = getattr(parser_class, "_parse_known_args", None)
    if original is None or getattr(original, "__torchtop__", False):
        return

    @functools.wraps(original)
    def _parse_known_args(self: argparse.ArgumentParser, arg_strings: Any, *args: Any,
                          **kwargs: Any) -> Any:  # fmt: skip
        result = original(self, arg_strings, *args, **kwargs)
        if _tail_of_argv(arg_strings) and isinstance(result, tuple):
            _record(self, result[0])
        return result

    _parse_known_args.__torchtop__ = True  # type: ignore[attr-defined]
    parser_class._parse_known_args = _parse_known_args


def _tail_of_argv(arg_strings: object) -> bool:
    """A non-empty option list that ends sys.argv: the script's command line or a subcommand's."""
    if not isinstance(arg_strings, list) or not arg_strings:
        return False
    argv = sys.argv[1:]
    return len(arg_strings) <= len(argv) and argv[len(argv) - len(arg_strings) :] == arg_strings


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
        "default": _plain(action.default),
        "value": _plain(getattr(parsed, action.dest, None)),
    }


def _plain(value: object) -> object:
    """A value a record can hold: jsonargparse's defaults may be classes or its own Namespaces."""
    if value is None or isinstance(value, str | int | float | bool | list):
        return value
    return repr(value)


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
