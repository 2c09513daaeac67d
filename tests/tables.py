"""Run-folder records as the JSON tables they are written as, for tests that look at a run
folder's files as a person reads them (torchtop's own readers use the typed records)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import msgspec

from torchtop.runs.records import JournalRecord


def tables(records: Iterable[JournalRecord]) -> list[dict[str, Any]]:
    return [msgspec.to_builtins(record) for record in records]
