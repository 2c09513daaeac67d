"""The one line a section is folded to when the terminal is too short for it (`tui.layout`).

It names what was folded and the key that shows it, drawn like a box's top border, so a section
that gave way reads as put aside, never as a box cut in half. The key's words always show: the
names are cut first where the line is narrow.
"""

from __future__ import annotations

from rich.cells import cell_len
from rich.text import Text
from textual.message import Message
from textual.widgets import Static

from torchtop.tui.palette import MUTED

UNFOLD_KEY = "f"
KEY_WORDS = f" · folded for room · {UNFOLD_KEY}: unfold "


def folded_text(names: list[str], width: int) -> Text:
    """`╶─ Hot stacks · Efficiency · folded for room · f: unfold ───╴`, `width` cells."""
    room = width - cell_len(KEY_WORDS) - 5
    titles = " · ".join(names)
    if cell_len(titles) > room:
        titles = titles[: max(room - 1, 0)] + "…"
    text = Text("╶─ ", style=MUTED)
    text.append(titles, style="bold")
    text.append(KEY_WORDS, style=MUTED)
    text.append("─" * max(width - cell_len(text.plain) - 1, 0) + "╴", style=MUTED)
    return text


class Reshaped(Message):
    """A section's needs changed (a trial's new line, the job's ending): arrange again."""


class FoldedLine(Static):
    DEFAULT_CSS = """
    FoldedLine {
        display: none;
        height: 1;
        text-wrap: nowrap;
    }
    """

    def fold(self, names: list[str]) -> None:
        """Show the line for the sections named (None of them: hide it)."""
        self.display = bool(names)
        if names:
            self.update(folded_text(names, self.app.size.width))
