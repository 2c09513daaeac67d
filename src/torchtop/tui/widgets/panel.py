"""The base of every panel: a bordered box that redraws from the newest frame set on it.

"Attributes down": the app assigns `panel.frame`, and the panel draws it at its current size;
a resize redraws from the same frame without asking anyone for data. Panels never call
collectors. A new frame that draws exactly as the last one asks Textual for nothing: most
ticks change a few numbers in a few panels, and rendering is where the dashboard's CPU goes.
`Panel.renders` counts the draws handed to Textual, for the cost benchmark.
"""

from __future__ import annotations

from typing import ClassVar

from rich.console import RenderableType
from rich.text import Text
from textual.geometry import Size
from textual.reactive import reactive
from textual.widget import Widget

from torchtop.tui.frame import Frame
from torchtop.tui.palette import MUTED

FOCUS_MARK = "▸ "
"""Before the focused panel's title: where tab has gone, without relying on colour."""


class Panel(Widget):
    TITLE: ClassVar[str] = ""
    renders: ClassVar[int] = 0

    frame: reactive[Frame | None] = reactive(None, always_update=True, repaint=False)

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._drawn: tuple[Size, RenderableType] | None = None
        self.rendering = False
        """In `render`: a change to the border now would show one paint late."""

    def on_mount(self) -> None:
        self.border_title = self.TITLE

    def on_focus(self) -> None:
        self.border_title = f"{FOCUS_MARK}{self.TITLE}"

    def on_blur(self) -> None:
        self.border_title = self.TITLE

    def _watch_frame(self, frame: Frame | None) -> None:
        if frame is None:
            return
        size = self.content_size
        drawn = (size, self.draw_at(frame, size))
        if drawn != self._drawn:
            self._drawn = drawn
            self.refresh()

    def render(self) -> RenderableType:
        Panel.renders += 1
        if self.frame is None:
            return Text("waiting for the first reading…", style=MUTED)
        size = self.content_size
        if self._drawn is None or self._drawn[0] != size:
            self.rendering = True
            try:
                self._drawn = (size, self.draw_at(self.frame, size))
            finally:
                self.rendering = False
        return self._drawn[1]

    def refresh_drawing(self) -> None:
        """Redraw from the same frame (a setting of the panel itself changed)."""
        self._drawn = None
        self.refresh()

    def draw_at(self, frame: Frame, size: Size) -> RenderableType:
        return self.draw(frame, max(size.width, 1), max(size.height, 1))

    def draw(self, frame: Frame, width: int, height: int) -> RenderableType:
        raise NotImplementedError


def lines_to_text(lines: list[Text], height: int) -> Text:
    """The first `height` lines, joined; each line cut at the panel's edge, not wrapped."""
    text = Text("\n").join(lines[:height])
    text.no_wrap = True
    text.overflow = "ellipsis"
    return text
