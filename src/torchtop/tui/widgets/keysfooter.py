"""The footer: every active key on one row, shortened rather than wrapped or cut at the edge.

Textual's footer is one row that scrolls sideways: at 80 columns the app's own keys (`? Help`,
`q Quit`, `p Pause`), which come last, fell off the edge once a panel or a kept fix added its
keys; a second row took a line from the panels. This one keeps one row: where the keys do not
fit, the trailer (the run clock) goes first, then the keys that are not the focused panel's
lose their words, from the right, `q Quit` and `? Help` last, so that every key stays on
screen and the focused panel's keys keep theirs. `trailer` is any widget to end the row with
(the run clock), with its width; it is told the room the keys leave, so it can be shorter.
"""

from __future__ import annotations

from dataclasses import dataclass

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
        height: 1;
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
        """What ends the row, and its width; `room`: the cells the keys leave on it."""
        return None

    def shown_keys(self) -> list[Key]:
        """One key per action, as Textual's footer shows them, in its order."""
        seen: dict[str, Key] = {}
        for _, (node, binding, enabled, tooltip) in self.screen.active_bindings.items():
            if binding.show and binding.action not in seen:
                own = node is not self.app and node is not self.screen
                seen[binding.action] = Key(binding, enabled, tooltip, own)
        return list(seen.values())

    def compose(self) -> ComposeResult:
        keys = self.shown_keys() if self._bindings_ready else []
        width = self._width or self.app.size.width
        cells = [key_cells(self.app.get_key_display(key.binding), key.words) for key in keys]
        trailer = self.trailer(width - sum(c + KEY_GAP for c in cells))
        if trailer is not None and sum(c + KEY_GAP for c in cells) + trailer[1] > width:
            trailer = None
        words = shortened(keys, [self.app.get_key_display(k.binding) for k in keys], width)
        row: list[Widget] = [
            FooterKey(
                key.binding.key,
                self.app.get_key_display(key.binding),
                said,
                key.binding.action,
                disabled=not key.enabled,
                tooltip=key.tooltip,
            ).data_bind(compact=Footer.compact)
            for key, said in zip(keys, words, strict=True)
        ]
        yield HorizontalGroup(*row, *([trailer[0]] if trailer else []), classes="keys-row")

    def on_resize(self, event: Resize) -> None:
        if event.size.width != self._width:
            self._width = event.size.width
            self.call_after_refresh(self.recompose)


@dataclass(frozen=True)
class Key:
    binding: Binding
    enabled: bool
    tooltip: str
    own: bool
    """The focused panel's own key (the first in the row): it keeps its words."""

    @property
    def words(self) -> str:
        return self.binding.description


LAST_SHORTENED = ("quit", "help")
"""The app's keys whose words go last: how to leave, and where every key is explained."""


def key_cells(display: str, words: str) -> int:
    return cell_len(display) + (1 + cell_len(words) if words else 0)


def shortened(keys: list[Key], displays: list[str], width: int) -> list[str]:
    """Each key's words, or none where the row would be wider than `width`: the keys that
    are not the focused panel's lose theirs from the right, `LAST_SHORTENED` last."""
    words = [key.words for key in keys]
    others = [i for i in reversed(range(len(keys))) if not keys[i].own]
    order = sorted(others, key=lambda i: keys[i].binding.action in LAST_SHORTENED)
    for index in order:
        if row_cells(displays, words) <= width:
            break
        words[index] = ""
    return words


def row_cells(displays: list[str], words: list[str]) -> int:
    return sum(key_cells(d, w) + KEY_GAP for d, w in zip(displays, words, strict=True)) - KEY_GAP
