"""One input of `torchtop diff`: its JSON report, the path given, and whether it was read from a
saved JSON report (whose missing sections are then said to be "not in a JSON report"); and a
section of the comparison as the text, Markdown and the side-by-side screen lay it out."""

from __future__ import annotations

from typing import Any

import msgspec

Document = dict[str, Any]
"""A JSON document read by key: the contract's report (`torchtop.report/1`, as `report_to_json`
writes it or as read back from a saved file) or the diff of two. Its shape is CONTRACT.md's, and
a saved report may come from another version, so readers check what they use."""


class DiffSide(msgspec.Struct, frozen=True):
    report: Document
    """The contract's JSON report (`torchtop.report/1`)."""
    label: str
    from_json: bool = False


class DiffSection(msgspec.Struct, frozen=True):
    """One part of the comparison: a title, column heads, rows of cells, and a closing note."""

    title: str
    header: tuple[str, ...] = ()
    rows: tuple[tuple[str, ...], ...] = ()
    note: str | None = None
    """One line or several (`\n` between them)."""
    left: int = 1
    """How many leading columns are words, aligned left (the rest are figures)."""
