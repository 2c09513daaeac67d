"""Hot stacks: where the job's Python spends its time, from py-spy, the user's code first;
sorted by share, function or file, filtered, and each frame's whole path with Enter."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text

from torchtop.tui.frame import Frame
from torchtop.tui.palette import LIBRARY_CODE, MUTED, USER_CODE
from torchtop.tui.widgets.listpanel import ListPanel, Row, Sort


class StacksPanel(ListPanel):
    TITLE = "Hot stacks"
    SORTS: ClassVar[tuple[Sort, ...]] = (Sort("share", True), Sort("function"), Sort("file"))

    def empty(self, frame: Frame) -> Text:
        reason = frame.unavailable.get("stacks")
        return Text(f"py-spy: {reason}" if reason else "no stack samples yet", style=MUTED)

    def rows(self, frame: Frame, width: int, height: int) -> tuple[list[Text], list[Row]]:
        rows = []
        for hot in frame.hot:
            line = Text(f"{hot.share:4.0%} ", style="bold" if hot.user else MUTED)
            line.append(hot.function, style=USER_CODE if hot.user else LIBRARY_CODE)
            line.append(f"  {hot.where}", style=MUTED)
            where = f"{hot.file}:{hot.line}" if hot.line is not None else hot.file
            code = "your code" if hot.user else "library code"
            whole = f"{hot.share:.0%} of samples · {code}\n{hot.function}\n{where}"
            rows.append(Row(line, (hot.share, hot.function, where), whole))
        return [], rows
