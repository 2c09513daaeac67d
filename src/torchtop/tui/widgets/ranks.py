"""Ranks (when more than one): each rank's step time, verdict and communication share, with the
slowest rank marked (a mark and a word, not only a colour), a straggler's excess busy time and
how a rank ended (a recorded run's `RankStanding`) with, under a rank that died or hangs, where
it was last seen (its last stack), and its node in a run several nodes share. Hidden while the
job has one rank."""

from __future__ import annotations

from rich.console import RenderableType
from rich.text import Text

from torchtop.model.report import RankReport
from torchtop.report.nodes import where_last
from torchtop.tui.charts import number
from torchtop.tui.frame import Frame
from torchtop.tui.palette import MUTED, VERDICT_COLOUR, VERDICT_DEFAULT_COLOUR
from torchtop.tui.widgets.panel import Panel, lines_to_text

SLOWEST_STYLE = "bold #ff5f5f"
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
    if is_slowest:
        line.append("  slowest", style=SLOWEST_STYLE)
    if item.node is not None:
        line.append(f"  on {item.node}", style=MUTED)  # a run several nodes' launchers share
    standing = item.standing
    if standing is not None and standing.straggler and standing.slower_by is not None:
        line.append(f"  straggler {standing.slower_by:+.0%}", style=SLOWEST_STYLE)
    if standing is not None and standing.ended is not None:
        line.append(f"  {standing.ended}", style=MUTED)
    return line


class RanksPanel(Panel):
    TITLE = "Ranks"

    def watch_frame(self, frame: Frame | None) -> None:
        self.display = frame is not None and len(frame.report.ranks) > 1

    def draw(self, frame: Frame, width: int, height: int) -> RenderableType:
        head = Text(f"{'rank':<8}{'step ms':>7}  {'verdict':<13}", style=MUTED)
        head.append(" conf" if width >= WIDE else "")
        head.append(" comm")
        slowest = frame.report.job.metrics.get("slowest_rank")
        if any(r.standing is not None and r.standing.straggler for r in frame.report.ranks):
            slowest = None  # synchronised ranks share one step time: the straggler is marked
        ranks = frame.report.ranks
        stacks = [r.standing.last_stack if r.standing is not None else None for r in ranks]
        # Where a rank that died or hangs was last seen, under it: only where every rank's
        # line still fits, as a rank left out would be a rank hidden.
        room = len(ranks) + sum(s is not None for s in stacks) < height
        lines = [head]
        for item, stack in zip(ranks, stacks, strict=True):
            lines.append(rank_line(item, slowest, width))
            if stack is not None and room:
                lines.append(Text(f"  ↳ last stack {where_last(stack)}", style=MUTED))
        return lines_to_text(lines, height)
