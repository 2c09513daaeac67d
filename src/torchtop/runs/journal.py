"""Append-only JSON Lines: one writer per file, safe to tail while written and after a crash.

A record is written with a single `os.write` of one complete line on an `O_APPEND` descriptor,
so a reader sees whole lines, or at worst a torn last line when the writer died mid-write;
`JournalReader` leaves an unterminated last line for the next read and, once the writer is
known to be gone, skips it and counts it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

_ENCODE = json.JSONEncoder(separators=(",", ":"), default=str).encode


class JournalWriter:
    """Appends records to one JSONL file. Not shared between processes: one file each."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def write(self, record: dict[str, Any]) -> None:
        os.write(self._fd, (_ENCODE(record) + "\n").encode("utf-8"))

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __enter__(self) -> JournalWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class JournalReader:
    """Reads the records added to a JSONL file since the last call."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset = 0
        self.torn_lines = 0
        self.bad_lines = 0

    def read_new(self, final: bool = False) -> Iterator[dict[str, Any]]:
        """New whole records; with `final`, the writer is gone and a torn tail is dropped."""
        try:
            with self.path.open("rb") as handle:
                handle.seek(self.offset)
                data = handle.read()
        except FileNotFoundError:
            return
        end = data.rfind(b"\n") + 1
        if final and end < len(data):
            self.torn_lines += 1
            self.offset += len(data)
        else:
            self.offset += end
        for line in data[:end].splitlines():
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except ValueError:
                self.bad_lines += 1
                continue
            if isinstance(record, dict):
                yield record


def write_once(path: Path, record: dict[str, Any]) -> None:
    """Write a whole JSON document atomically (temporary file, then rename)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temporary.write_text(json.dumps(record, indent=2, default=str) + "\n", encoding="utf-8")
    os.replace(temporary, path)


def read_document(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (FileNotFoundError, ValueError):
        return None
    return data if isinstance(data, dict) else None
