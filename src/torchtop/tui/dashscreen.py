"""The dashboard's main screen: moving between panels and what the lists ask for.

Tab and shift+tab walk every panel shown (Textual's focus chain, in the layout's order). A
list's `/` (`FilterAsked`) opens the filter bar for it, each keystroke is handed down as the
list's `filter_text`, and Enter or Esc (`FilterClosed`) gives the focus back to the list; a
row's Enter (`RowChosen`) shows it whole. Messages come up from the panels; the screen only
sets their attributes and opens screens.
"""

from __future__ import annotations

from typing import ClassVar

from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.widgets import Input

from torchtop.tui.rowscreen import RowScreen
from torchtop.tui.widgets.filterbar import FilterBar, FilterClosed
from torchtop.tui.widgets.folded import UNFOLD_KEY, Reshaped
from torchtop.tui.widgets.listpanel import FilterAsked, ListPanel, RowChosen


class DashboardScreen(Screen[None]):
    """Its own Tab binding, so the footer shows how to move between panels."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("tab", "app.focus_next", "Panel"),
        Binding("shift+tab", "app.focus_previous", "Previous panel", show=False),
        Binding("a", "app.apply", "Apply"),
        # Where nothing can be applied `a` is not offered, but pressed it says why.
        Binding("a", "app.why_no_apply", "Apply", show=False),
        Binding("r", "app.revert", "Revert"),
        Binding("m", "app.time_modules", "Modules"),
        Binding(UNFOLD_KEY, "app.unfold", "Unfold"),
    ]

    def __init__(self, id: str | None = None) -> None:
        super().__init__(id=id)
        self.filtering: ListPanel | None = None

    def on_filter_asked(self, message: FilterAsked) -> None:
        self.filtering = message.panel
        self.query_one(FilterBar).open(message.panel.TITLE, message.panel.filter_text)
        self.post_message(Reshaped())  # the bar takes a row from the sections

    def on_input_changed(self, message: Input.Changed) -> None:
        if message.input.id == "filter" and self.filtering is not None:
            self.filtering.filter_text = message.value

    def on_filter_closed(self, message: FilterClosed) -> None:
        bar = self.query_one(FilterBar)
        bar.display = False
        self.post_message(Reshaped())
        panel, self.filtering = self.filtering, None
        if panel is not None:
            if not message.kept:
                panel.filter_text = ""
            panel.focus()

    def on_row_chosen(self, message: RowChosen) -> None:
        self.app.push_screen(RowScreen(message.title, message.text))
