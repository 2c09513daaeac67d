"""Ranks (when more than one): each rank's step time, verdict and communication share, with the
slowest rank marked (a mark and a word, not only a colour), a straggler's excess busy time, a
rank its launcher restarted (`restarted · PID new (was old)`) and how a rank ended (a recorded
run's `RankStanding`) with, under a rank that died or hangs, where it was last seen (its last
stack), and its node in a run several nodes share. Hidden while the job has one rank."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text

from torchtop.model.report import RankReport
from torchtop.report.nodes import where_last
from torchtop.tui.charts import number
from torchtop.tui.frame import Frame
from torchtop.tui.palette import MUTED, VERDICT_COLOUR, VERDICT_DEFAULT_COLOUR
from torchtop.tui.widgets.listpanel import ListPanel, Row, Sort

SLOWEST_STYLE = "bold #ff5f5f"
RESTARTED_STYLE = "#e0b000"
WIDE = 44


def rank_line(item: RankReport, slowest: object, width: int) -> Text:
    analysis, verdict = item.analysis, item.verdict
    mean = number(analysis.metrics.get("step_mean_ms"))
    is_slowest = analysis.label == slowest
    line = Text(f"{analysis.label:<7}{'◀' if is_slowest else ' '}",
                style=SLOWEST_STYLE if is_slowest else "bold")  # fmt: skip
    line.append(f"{mean:7.1f}" if mean is not None else "    n/a")
    line.append(f"  {verdict.bottleneck:<13}",
                style=VERDICT_COLOUR.get(verdict.bottleneck, VERDICT_DEFAULT_COLOUR))  # fmt: skip
    if width >= WIDE:
        line.append(f" {verdict.confidence:.2f}")
    line.append(f"{analysis.breakdown.get('communication', 0.0):5.0%}")
    # How a rank ended comes first: in a narrow panel the end of the line is cut, and a dead
    # rank's signal matters more than which rank was slowest or its node.
    standing = item.standing
    if standing is not None and standing.ended is not None:
        line.append(f"  {standing.ended}", style=MUTED)
    if is_slowest:
        line.append("  slowest", style=SLOWEST_STYLE)
    if standing is not None and standing.straggler and standing.slower_by is not None:
        line.append(f"  straggler {standing.slower_by:+.0%}", style=SLOWEST_STYLE)
    if item.node is not None:
        line.append(f"  on {item.node}", style=MUTED)  # a run several nodes' launchers share
    return line


class RanksPanel(ListPanel):
    TITLE = "Ranks"
    SORTS: ClassVar[tuple[Sort, ...]] = (
        Sort("rank"),
        Sort("step ms", True),
        Sort("verdict"),
        Sort("comm", True),
    )

    def watch_frame(self, frame: Frame | None) -> None:
        self.display = frame is not None and len(frame.report.ranks) > 1

    def rows(self, frame: Frame, width: int, height: int) -> tuple[list[Text], list[Row]]:
        head = Text(f"{'rank':<8}{'step ms':>7}  {'verdict':<13}", style=MUTED)
        head.append(" conf" if width >= WIDE else "")
        head.append(" comm")
        slowest = frame.report.job.metrics.get("slowest_rank")
        if any(r.standing is not None and r.standing.blocks_judged for r in frame.report.ranks):
            slowest = None  # synchronised ranks share one step time: the judgement marks
        return [head], [rank_row(item, slowest, width) for item in frame.report.ranks]


def rank_row(item: RankReport, slowest: object, width: int) -> Row:
    """A rank's line, and under a rank that died or hangs, where it was last seen."""
    line = rank_line(item, slowest, width)
    stack = item.standing.last_stack if item.standing is not None else None
    under = (Text(f"  ↳ last stack {where_last(stack)}", style=MUTED),) if stack else ()
    if item.restarted_words is not None:  # its launcher started it again: under, to fit 80 cols
        under = (Text(f"  ↳ {item.restarted_words}", style=RESTARTED_STYLE), *under)
    analysis = item.analysis
    keys = (
        analysis.rank,
        number(analysis.metrics.get("step_mean_ms")),
        item.verdict.bottleneck,
        analysis.breakdown.get("communication", 0.0),
    )
    whole = "\n".join([line.plain, *(u.plain.strip() for u in under)])
    return Row(line, keys, whole, under=under)
