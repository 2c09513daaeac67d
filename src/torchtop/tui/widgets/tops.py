"""The kernels and operators that take the time, from the latest profiler window or the trace.

Offline it takes the live counters' place; live and in a recorded run it shares the bottom row
with the hot stacks, giving way to the ranks table when there is more than one rank. One box,
two lists in it (kernels above, operators below), each reached by tab and sorted (share,
calls, name) and filtered on its own; a kernel's name is shown demangled with its templates
folded (`<…>`), and whole with Enter.
"""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.reactive import reactive

from torchtop.model.analysis import NamedTime
from torchtop.tui.demangle import short_name
from torchtop.tui.frame import Frame
from torchtop.tui.palette import MUTED
from torchtop.tui.widgets.listpanel import ListPanel, Row, Sort

SORTS = (Sort("share", True), Sort("calls", True), Sort("name"))


def top_rows(items: tuple[NamedTime, ...], names: dict[str, str] | None, of: str) -> list[Row]:
    """One row per kernel (`names`: the demangled ones; templates folded) or operator (None:
    shown as recorded, `enumerate(DataLoader)#...` is a name, not a call)."""
    rows = []
    for item in items:
        name = names.get(item.name, item.name) if names is not None else item.name
        line = Text(f"{item.share:6.1%} {item.count:6d}x ", style=MUTED)
        line.append(short_name(name) if names is not None else name)
        whole = f"{item.share:.1%} of {of}, {item.count} calls\n{name}"
        if name != item.name:
            whole += f"\n\nas recorded: {item.name}"
        rows.append(Row(line, (item.share, item.count, name), whole))
    return rows


class KernelList(ListPanel):
    TITLE = "kernels"
    ABOUT = "share of kernel time"
    SORTS: ClassVar[tuple[Sort, ...]] = SORTS
    BORDERED = False

    def watch_frame(self, frame: Frame | None) -> None:
        self.display = frame is not None and bool(frame.report.job.top_kernels)

    def rows(self, frame: Frame, width: int, height: int) -> tuple[list[Text], list[Row]]:
        kernels = top_rows(frame.report.job.top_kernels, dict(frame.kernel_names), "kernel time")
        return [Text(self.TITLE)], kernels


class OperatorList(ListPanel):
    TITLE = "operators"
    ABOUT = "share of self time"
    SORTS: ClassVar[tuple[Sort, ...]] = SORTS
    BORDERED = False

    def watch_frame(self, frame: Frame | None) -> None:
        self.display = frame is not None and bool(frame.report.job.top_ops)

    def rows(self, frame: Frame, width: int, height: int) -> tuple[list[Text], list[Row]]:
        return [Text(self.TITLE)], top_rows(frame.report.job.top_ops, None, "operator self time")


class TopsPanel(Vertical):
    """The box around the two lists; shown when it has something to show."""

    frame: reactive[Frame | None] = reactive(None, always_update=True)

    def __init__(self, *, beside_ranks: bool, classes: str | None = None) -> None:
        super().__init__(classes=classes)
        self.beside_ranks = beside_ranks

    def compose(self) -> ComposeResult:
        yield KernelList()
        yield OperatorList()

    def on_mount(self) -> None:
        self.border_title = "Top kernels and operators"

    def watch_frame(self, frame: Frame | None) -> None:
        if frame is None:
            return
        job = frame.report.job
        recorded = bool(job.top_kernels or job.top_ops)
        self.display = recorded and not (self.beside_ranks and len(frame.report.ranks) > 1)
        if not recorded and not self.beside_ranks:
            self.display = True
            self.border_subtitle = "no kernels or operators recorded"

    def on_descendant_focus(self) -> None:
        self.border_title = "▸ Top kernels and operators"

    def on_descendant_blur(self) -> None:
        self.border_title = "Top kernels and operators"
