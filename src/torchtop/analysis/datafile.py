"""The data files torchtop ships beside its code (rule files, frame patterns, the peak table)
are read one way: TOML text and its regular expressions, each problem one line that names the
file, raised as the caller's own error type (a rule's `RuleError`, the table's own)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any


def read_toml(path: Path, error: type[Exception]) -> dict[str, Any]:
    """The TOML document at `path`; `error` naming the file where it cannot be read or parsed."""
    try:
        source = path.read_bytes()
    except OSError as exc:
        raise error(f"{path}: {exc.strerror or exc}") from None
    return parse_toml(path, source, error)


def parse_toml(path: Path, source: bytes, error: type[Exception]) -> dict[str, Any]:
    """The TOML document in `source`, read from `path` (named in the error)."""
    import tomllib  # only when a file is read: a cached rule tree never needs it

    try:
        return tomllib.loads(source.decode("utf-8"))
    except UnicodeDecodeError:
        raise error(f"{path}: not UTF-8 text") from None
    except tomllib.TOMLDecodeError as exc:
        raise error(f"{path}: not valid TOML ({exc})") from None


def compile_pattern(
    where: str, text: str, error: type[Exception], flags: int = 0
) -> re.Pattern[str]:
    """`text` compiled; `error` saying `where` it was written otherwise."""
    try:
        return re.compile(text, flags)
    except re.error as exc:
        raise error(f"{where}: pattern {text!r} is not a regular expression ({exc})") from None
