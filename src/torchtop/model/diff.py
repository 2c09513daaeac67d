"""One input of `torchtop diff`: its JSON report, the path given, and whether it was read from a
saved JSON report (whose missing sections are then said to be "not in a JSON report")."""

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
