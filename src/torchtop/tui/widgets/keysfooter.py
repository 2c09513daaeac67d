"""The footer: every active key, wrapped onto a second row rather than cut at the edge.

Textual's footer is one row that scrolls sideways: at 80 columns the app's own keys (`? Help`,
`q Quit`, `p Pause`), which come last, fell off the edge once a panel or a kept fix added its
keys. This one lays the same clickable keys out in as many rows as they need (two at 80
columns at most), in the order Textual gives them (the focused panel's first, the app's last).
`trailer` is any widget to end the last row with (the run clock), with its width; it is told
the room the keys leave on one row, so it can be shorter where they leave little.
"""

from __future__ import annotations

from collections.abc import Iterator

from rich.cells import cell_len
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import HorizontalGroup
from textual.events import Resize
from textual.widget import Widget
from textual.widgets import Footer
from textual.widgets._footer import FooterKey

KEY_GAP = 1


class KeysFooter(Footer):
    DEFAULT_CSS = """
    KeysFooter {
        height: auto;
        max-height: 3;
        layout: vertical;
    }
    KeysFooter HorizontalGroup.keys-row {
        height: 1;
        width: 1fr;
    }
    """

    def __init__(self) -> None:
        super().__init__(compact=True, show_command_palette=False)
        self._width = 0

    def trailer(self, room: int) -> tuple[Widget, int] | None:
        """What ends the last row, and its width; `room`: the cells the keys leave on a row."""
        return None

    def shown_bindings(self) -> list[tuple[Binding, bool, str]]:
        """One binding per action, as Textual's footer shows them, in its order."""
        seen: dict[str, tuple[Binding, bool, str]] = {}
        for _, binding, enabled, tooltip in self.screen.active_bindings.values():
            if binding.show and binding.action not in seen:
                seen[binding.action] = (binding, enabled, tooltip)
        return list(seen.values())

    def compose(self) -> ComposeResult:
        shown = self.shown_bindings() if self._bindings_ready else []
        keys = [
            (
                FooterKey(
                    binding.key,
                    self.app.get_key_display(binding),
                    binding.description,
                    binding.action,
                    disabled=not enabled,
                    tooltip=tooltip,
                ).data_bind(compact=Footer.compact),
                cell_len(self.app.get_key_display(binding)) + 1 + cell_len(binding.description),
            )
            for binding, enabled, tooltip in shown
        ]
        width = self._width or self.app.size.width
        trailer = self.trailer(width - sum(cells + KEY_GAP for _, cells in keys))
        items: list[tuple[Widget, int]] = [*keys, *([trailer] if trailer else [])]
        for row in rows_of(items, width):
            yield HorizontalGroup(*row, classes="keys-row")

    def on_resize(self, event: Resize) -> None:
        if event.size.width != self._width:
            self._width = event.size.width
            self.call_after_refresh(self.recompose)


def rows_of(items: list[tuple[Widget, int]], width: int) -> Iterator[list[Widget]]:
    """`items` (each with its width) in rows no wider than `width`, in order."""
    row: list[Widget] = []
    used = 0
    for widget, cells in items:
        if row and used + cells > width:
            yield row
            row, used = [], 0
        row.append(widget)
        used += cells + KEY_GAP
    if row:
        yield row
