"""The screen as a terminal shows it, in plain text, and the boxes on it that are not whole.

`screen_lines` renders what `App.run_test` would put on a terminal (a modal screen over the
dimmed dashboard under it) as lines of characters, as `tmux capture-pane -p` reads them.
`broken_boxes` finds every rounded box on it whose four corners and sides are not all there: a
panel squeezed to its top border, or one that lost its bottom, is named with where it starts.
"""

from __future__ import annotations

import io
from typing import Any

from rich.console import Console
from textual.app import App
from textual.screen import ModalScreen

from torchtop.tui.widgets.keysfooter import KeysFooter

TOP_LEFT, TOP_RIGHT, BOTTOM_LEFT, BOTTOM_RIGHT, SIDE = "╭", "╮", "╰", "╯", "│"


def top_lines(app: App[Any]) -> list[str]:
    """The lines of the screen on top: under a modal, only the modal's box (what it covers of
    the dashboard is cut, as it should be), padded by nothing."""
    lines = screen_lines(app)
    if not isinstance(app.screen, ModalScreen):
        return lines
    box = app.screen.children[0].region
    return [line[box.x : box.right] for line in lines[box.y : box.bottom]]


def screen_lines(app: App[Any]) -> list[str]:
    """Every row of the screen shown now, `width` cells each (the screens under a modal too)."""
    width, height = app.size
    console = Console(width=width, height=height, file=io.StringIO(), record=True,
                      force_terminal=True, legacy_windows=False, safe_box=False)  # fmt: skip
    console.print(
        app.screen._compositor.render_update(full=True, screen_stack=app._background_screens)
    )
    lines = console.export_text(styles=False).splitlines()
    return [line.ljust(width) for line in lines[:height]]


def broken_boxes(lines: list[str]) -> list[str]:
    """`row 9 col 0: no bottom`, ... for each box not closed on every side; none: all whole.
    A box is read from its top-left corner: along its top to the first top-right corner, down
    both sides to the bottom corners, which must face each other on one row."""
    broken = []
    for row, line in enumerate(lines):
        for col, char in enumerate(line):
            if char == TOP_LEFT:
                why = unclosed(lines, row, col)
                if why:
                    broken.append(f"row {row} col {col}: {why}")
            elif char == BOTTOM_LEFT and not opened_above(lines, row, col):
                broken.append(f"row {row} col {col}: a bottom with no top")
    return broken


def unclosed(lines: list[str], row: int, left: int) -> str | None:
    right = lines[row].find(TOP_RIGHT, left + 1)
    if right < 0:
        return "no top-right corner"
    for below in range(row + 1, len(lines)):
        corners = lines[below][left], lines[below][right]
        if corners == (BOTTOM_LEFT, BOTTOM_RIGHT):
            return None if below > row + 1 else "no room inside"
        if corners != (SIDE, SIDE):
            return f"row {below}: sides {corners[0]!r} {corners[1]!r}, no bottom"
    return "no bottom"


def opened_above(lines: list[str], row: int, col: int) -> bool:
    for above in range(row - 1, -1, -1):
        if lines[above][col] == TOP_LEFT:
            return True
        if lines[above][col] != SIDE:
            return False
    return False


def footer_rows(app: App[Any]) -> int:
    """The rows the dashboard's footer takes (on the screen shown: its own footer, if any)."""
    footers = app.screen.query(KeysFooter)
    return footers.first().outer_size.height if footers else 0
