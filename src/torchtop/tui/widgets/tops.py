"""The kernels and operators that take the time, from the latest profiler window or the trace.

Offline it takes the live counters' place; live and in a recorded run it shares the bottom row
with the hot stacks, giving way to the ranks table when there is more than one rank.
"""

from __future__ import annotations

from rich.console import RenderableType
from rich.text import Text

from torchtop.model.analysis import NamedTime
from torchtop.tui.frame import Frame
from torchtop.tui.palette import MUTED
from torchtop.tui.widgets.panel import Panel, lines_to_text


def top_lines(title: str, items: tuple[NamedTime, ...], rows: int) -> list[Text]:
    if not items or rows < 2:
        return []
    lines = [Text(title, style="bold")]
    for item in items[: rows - 1]:
        line = Text(f"{item.share:6.1%} {item.count:6d}x ", style=MUTED)
        line.append(item.name)
        lines.append(line)
    return lines


class TopsPanel(Panel):
    TITLE = "Top kernels and operators"

    def __init__(self, *, beside_ranks: bool, classes: str | None = None) -> None:
        super().__init__(classes=classes)
        self.beside_ranks = beside_ranks

    def watch_frame(self, frame: Frame | None) -> None:
        if frame is None or not self.beside_ranks:
            return
        job = frame.report.job
        self.display = len(frame.report.ranks) < 2 and bool(job.top_kernels or job.top_ops)

    def draw(self, frame: Frame, width: int, height: int) -> RenderableType:
        job = frame.report.job
        if not job.top_kernels and not job.top_ops:
            return Text("no kernels or operators recorded", style=MUTED)
        kernel_rows = height // 2 if job.top_kernels and job.top_ops else height
        lines = top_lines("kernels (share of kernel time)", job.top_kernels, kernel_rows)
        lines += top_lines("operators (share of self time)", job.top_ops, height - len(lines))
        return lines_to_text(lines, height)
