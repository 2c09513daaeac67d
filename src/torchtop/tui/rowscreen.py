"""The whole of one row of a list (Enter): a long kernel name demangled and unfolded, a hot
frame's full path, a rank's last stack, the Devices panel with nothing summarised."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static


class RowScreen(ModalScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,q,enter", "close", "Close")]

    def __init__(self, title: str, text: str) -> None:
        super().__init__()
        self.title_text = title
        self.text = text

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="row") as scroll:
            scroll.border_title = self.title_text
            scroll.border_subtitle = "Esc: back"
            text = Text(self.text)
            text.overflow = "fold"
            yield Static(text)

    def action_close(self) -> None:
        self.dismiss(None)
