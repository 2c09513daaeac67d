"""The filter input that `/` opens under the panels: what is typed filters the list that asked
(the app hands each change down as the panel's `filter_text`); Enter keeps the filter and goes
back to the list, Esc clears it. It says which list it filters."""

from __future__ import annotations

from typing import ClassVar

from textual.binding import Binding, BindingType
from textual.message import Message
from textual.widgets import Input


class FilterClosed(Message):
    def __init__(self, kept: bool) -> None:
        super().__init__()
        self.kept = kept


class FilterBar(Input):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "clear", "Clear filter"),
        Binding("enter", "keep", "Keep filter"),
    ]

    def __init__(self) -> None:
        super().__init__(id="filter", compact=True)
        self.display = False

    def open(self, title: str, text: str) -> None:
        self.placeholder = f"filter {title} (Enter keeps, Esc clears)"
        self.value = text
        self.display = True
        self.focus()

    def action_keep(self) -> None:
        self.post_message(FilterClosed(kept=True))

    def action_clear(self) -> None:
        self.value = ""
        self.post_message(FilterClosed(kept=False))
