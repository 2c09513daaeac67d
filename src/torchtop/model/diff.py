"""One input of `torchtop diff`: its JSON report, the path given, and whether it was read from a
saved JSON report (whose missing sections are then said to be "not in a JSON report")."""

from __future__ import annotations

from typing import Any

import msgspec


class DiffSide(msgspec.Struct, frozen=True):
    report: dict[str, Any]
    """The contract's JSON report (`torchtop.report/1`)."""
    label: str
    from_json: bool = False
