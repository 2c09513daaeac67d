"""Run-folder records to bytes and back: the only encoder and decoder of the run folder.

Decoding is strict first (one module-level `msgspec.json.Decoder` over the tagged union: no
dict is built, which matters to a watcher polling every second on a run of hours), then
forgiving: a record from a newer writer with a field this version does not know has that field
dropped and counted, and a record of a kind it does not know is skipped and counted
(`Decoded`); neither is ever fatal.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import TypeVar

import msgspec

from torchtop.runs.records import Document, ExitRecord, JournalRecord, Record, RunRecord

D = TypeVar("D", RunRecord, ExitRecord)

_ENCODER = msgspec.json.Encoder(enc_hook=str)
_DECODER = msgspec.json.Decoder(Record)
_UNKNOWN_FIELD = re.compile(
    r"^Object contains unknown field `(?P<name>[^`]*)`(?: - at `(?P<at>.*)`)?$"
)
_PATH_STEP = re.compile(r"\.([^.\[]+)|\[(\d+)\]")
MAX_UNKNOWN_FIELDS = 64
"""Unknown fields dropped from one record before it is given up as bad."""


def encode_line(record: JournalRecord) -> bytes:
    """One journal line, newline included (what `JournalWriter` appends)."""
    return _ENCODER.encode(record) + b"\n"


def encode_document(document: Document) -> str:
    """`run.json` / `exit.json` text: indented as they always were."""
    return json.dumps(msgspec.to_builtins(document, enc_hook=str), indent=2) + "\n"


@dataclass
class Decoded:
    """What reading lines found besides records: counts, never errors."""

    bad_lines: int = 0
    """Not JSON, or JSON that breaks the schema (a field of the wrong type)."""
    unknown_kinds: int = 0
    """Records of a kind this version does not know (a newer writer's), skipped."""
    unknown_fields: int = 0
    """Fields this version does not know, dropped from records that were kept."""


def decode_line(line: bytes, counts: Decoded) -> Record | None:
    """The record on `line`, or None (counted in `counts`) when there is none to use."""
    try:
        record: Record = _DECODER.decode(line)
        return record
    except msgspec.ValidationError as error:
        return _forgiving(line, str(error), counts)
    except msgspec.DecodeError:
        counts.bad_lines += 1
        return None


def _forgiving(line: bytes, message: str, counts: Decoded) -> Record | None:
    if message.startswith("Invalid value") and message.endswith("- at `$.kind`"):
        counts.unknown_kinds += 1
        return None
    if _UNKNOWN_FIELD.match(message) is None:
        counts.bad_lines += 1
        return None
    data: object = msgspec.json.decode(line)
    for _ in range(MAX_UNKNOWN_FIELDS):
        found = _UNKNOWN_FIELD.match(message)
        if found is None or not _drop(data, found["at"] or "$", found["name"]):
            break
        counts.unknown_fields += 1
        try:
            record: Record = msgspec.convert(data, Record)
            return record
        except msgspec.ValidationError as error:
            message = str(error)
    counts.bad_lines += 1
    return None


def _drop(data: object, at: str, name: str) -> bool:
    """Remove key `name` from the table at path `at` (`$.processes[0].threads[2]`)."""
    for key, index in _PATH_STEP.findall(at[1:]):
        if key and isinstance(data, dict):
            data = data.get(key)
        elif index and isinstance(data, list) and int(index) < len(data):
            data = data[int(index)]
        else:
            return False
    if isinstance(data, dict) and name in data:
        del data[name]
        return True
    return False


def decode_document(text: bytes, kind: type[D]) -> D | None:
    """`run.json` or `exit.json`, unknown fields dropped; None when it is not one."""
    try:
        data = msgspec.json.decode(text)
    except msgspec.DecodeError:
        return None
    if not isinstance(data, dict):
        return None
    known = set(kind.__struct_fields__)
    try:
        return msgspec.convert({k: v for k, v in data.items() if k in known}, kind)
    except msgspec.ValidationError:
        return None
