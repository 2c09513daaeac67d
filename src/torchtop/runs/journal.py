"""Append-only JSON Lines: one writer per file, safe to tail while written and after a crash.

A record is written with a single `os.write` of one complete line on an `O_APPEND` descriptor,
so a reader sees whole lines, or at worst a torn last line when the writer died mid-write;
`JournalReader` leaves an unterminated last line for the next read and, once the writer is
known to be gone, skips it and counts it. Lines are encoded and decoded only through the
Structs of `runs.records`, so what is written is what the readers expect.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

from torchtop.runs.codec import (
    D,
    Decoded,
    decode_document,
    decode_line,
    encode_document,
    encode_line,
)
from torchtop.runs.records import Document, JournalRecord, Record


class JournalWriter:
    """Appends records to one JSONL file. Not shared between processes: one file each."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def write(self, record: JournalRecord) -> None:
        os.write(self._fd, encode_line(record))

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
        self.decoded = Decoded()

    @property
    def bad_lines(self) -> int:
        return self.decoded.bad_lines

    def read_new(self, final: bool = False) -> Iterator[Record]:
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
            if line.strip():
                record = decode_line(line, self.decoded)
                if record is not None:
                    yield record


def write_text_once(path: Path, text: str) -> None:
    """Write a whole file atomically (temporary file, then rename)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temporary.write_text(text, encoding="utf-8")
    os.replace(temporary, path)


def write_once(path: Path, document: object) -> None:
    """Write a JSON document (a report, a trial) atomically, indented."""
    write_text_once(path, json.dumps(document, indent=2, default=str) + "\n")


def write_record(path: Path, document: Document) -> None:
    """Write `run.json` or `exit.json` atomically, through its Struct."""
    write_text_once(path, encode_document(document))


def read_record(path: Path, kind: type[D]) -> D | None:
    """`run.json` or `exit.json`; None when absent or not such a document."""
    try:
        text = path.read_bytes()
    except FileNotFoundError:
        return None
    return decode_document(text, kind)
