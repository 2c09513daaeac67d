"""Hot stacks: where the job's Python spends its time, from py-spy, the user's code first."""

from __future__ import annotations

from rich.console import RenderableType
from rich.text import Text

from torchtop.tui.frame import Frame
from torchtop.tui.palette import LIBRARY_CODE, MUTED, USER_CODE
from torchtop.tui.widgets.panel import Panel, lines_to_text


class StacksPanel(Panel):
    TITLE = "Hot stacks"

    def draw(self, frame: Frame, width: int, height: int) -> RenderableType:
        if not frame.hot:
            reason = frame.unavailable.get("stacks")
            text = f"py-spy: {reason}" if reason else "no stack samples yet"
            return Text(text, style=MUTED)
        lines = []
        for hot in frame.hot:
            line = Text(f"{hot.share:4.0%} ", style="bold" if hot.user else MUTED)
            line.append(hot.function, style=USER_CODE if hot.user else LIBRARY_CODE)
            line.append(f"  {hot.where}", style=MUTED)
            lines.append(line)
        return lines_to_text(lines, height)
