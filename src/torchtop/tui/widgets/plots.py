"""What the device plots share: reading a counter out of sample records, and one labelled
sparkline line per counter (label, plot over time, the newest value)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

from rich.text import Text

from torchtop.tui.charts import number, sparkline

LABEL = 7
VALUE = 28
NARROW_VALUE = 14
NARROW = 70
BUSY = "#5fc75f"
WARM = "#e0b000"


R = TypeVar("R")


def series(records: Sequence[R], read: Callable[[R], float | None]) -> list[float | None]:
    """One counter of each sample record, oldest first (None where not measured)."""
    return [number(read(r)) for r in records]


def plot_line(label: str, values: list[float | None], value: str, width: int, top: float | None,
              style: str = BUSY) -> Text:  # fmt: skip
    line = Text(label.ljust(LABEL), style="bold")
    value_width = VALUE if width >= NARROW else NARROW_VALUE
    line.append_text(
        sparkline(values, max(width - LABEL - value_width - 1, 4), top=top, style=style)
    )
    line.append(" " + value)
    return line


def percent(value: float | None) -> str:
    return f"{value:.0f}%" if value is not None else "n/a"
