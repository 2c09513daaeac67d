"""Resolve the paths a user gives into trace files: a file, or every trace in a folder."""

from __future__ import annotations

from pathlib import Path

from torchtop.errors import InputError

TRACE_SUFFIXES = (".json", ".json.gz")


def is_trace_name(path: Path) -> bool:
    return path.name.endswith(TRACE_SUFFIXES)


def find_trace_files(paths: list[str]) -> list[Path]:
    """Files in the order given; a folder contributes its traces (recursively), sorted by name."""
    found: list[Path] = []
    for text in paths:
        path = Path(text)
        if not path.exists():
            raise InputError(text, "no such file or folder")
        if path.is_dir():
            inside = sorted(p for p in path.rglob("*") if p.is_file() and is_trace_name(p))
            if not inside:
                raise InputError(
                    text,
                    "folder holds no .json or .json.gz trace (`torchtop run -- python "
                    "train.py` records some)",
                )
            found.extend(inside)
        elif path.is_file():
            found.append(path)
        else:
            raise InputError(text, "not a regular file")
    return found
