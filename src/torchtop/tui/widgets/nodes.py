"""Nodes (a run several launchers share): one line per node, side by side with its peers: its
ranks, its newest CPU, memory and GPU readings, its ranks' step rate, and how its job ended.
Hidden for a run of one launcher, so single-node dashboards look as they did."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text

from torchtop.tui.frame import Frame
from torchtop.tui.noderows import NodeRow
from torchtop.tui.palette import MUTED
from torchtop.tui.widgets.listpanel import ListPanel, Row, Sort

ENDED_STYLE = "bold #ff5f5f"
WIDE = 40
"""Narrower than this, a row keeps its name, CPU, GPU and step rate (and how it ended)."""


def node_line(row: NodeRow, wide: bool = True) -> Text:
    """Name, ranks, CPU, memory, GPU, step rate and ending; narrow: name, CPU, GPU, rate."""
    line = Text(f"{row.name:<8}" if wide else f"{row.name:<5}", style="bold")
    if wide:
        line.append(f"{','.join(str(r) for r in row.ranks) or '-':<6}")
    line.append(f"{_pct(row.cpu_pct):>5}")
    if wide:
        mem = f"{row.mem_used_bytes / 1e9:.1f}G" if row.mem_used_bytes is not None else "n/a"
        line.append(f"{mem:>7}")
    line.append(f"{_pct(row.gpu_util_pct):>5}")
    line.append(f"{row.steps_per_s:>7.1f}" if row.steps_per_s is not None else f"{'n/a':>7}")
    if row.ended is not None:
        # An end other than a clean one stands out: a node whose job crashed is the news.
        line.append(f"  {row.ended}", style=MUTED if row.ended == "exited" else ENDED_STYLE)
    return line


def _pct(value: float | None) -> str:
    return f"{value:.0f}%" if value is not None else "n/a"


class NodesPanel(ListPanel):
    TITLE = "Nodes"
    SORTS: ClassVar[tuple[Sort, ...]] = (
        Sort("node"),
        Sort("cpu", True),
        Sort("gpu", True),
        Sort("step/s", True),
    )

    def watch_frame(self, frame: Frame | None) -> None:
        self.display = frame is not None and bool(frame.nodes)

    def rows(self, frame: Frame, width: int, height: int) -> tuple[list[Text], list[Row]]:
        wide = width >= WIDE
        columns = (
            f"{'node':<8}{'ranks':<6}{'cpu':>5}{'mem':>7}{'gpu':>5}"
            if wide
            else f"{'node':<5}{'cpu':>5}{'gpu':>5}"
        )
        head = Text(columns + f"{'step/s':>7}", style=MUTED)
        rows = [
            Row(
                node_line(row, wide),
                (row.name, row.cpu_pct, row.gpu_util_pct, row.steps_per_s),
                node_line(row, wide=True).plain,
            )
            for row in frame.nodes
        ]
        return [head], rows
