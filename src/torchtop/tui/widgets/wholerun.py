"""Over the run: steps/s, the periodic stalls and memory over the whole run, from the report's
`timeline` (`analysis.timeline`: at most 60 equal spans of time, oldest first).

The step-time history beside the verdict shows how each step's time is split; this shows what
only a long run reveals: a rate that drifts, memory that creeps up, stalls on a schedule. A row
each, the spans spread over the same columns, so a stall's mark sits under the dip it caused
and a fall in steps/s over the memory that rose with it. Shown once the run is long enough to
say something (`LONG_ENOUGH_S`), or as soon as the long run's detectors find stalls, growth or
drift, when it is their evidence; `tui.arrange` then ranks it above the row of lists.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import RenderableType
from rich.text import Text

from torchtop.model.timeline import Timeline, TimelineBucket
from torchtop.tui.charts import SPARKS, duration, number, size
from torchtop.tui.frame import Frame
from torchtop.tui.palette import MUTED
from torchtop.tui.widgets.panel import Panel, lines_to_text
from torchtop.tui.widgets.plots import BUSY, WARM

LONG_ENOUGH_S = 120.0
"""A run shorter than this, where the long run found nothing, has no timeline worth its rows."""
LABEL = 8
VALUE = 21
NARROW_VALUE = 13
NARROW = 60
STALL_MARK = "▲"
STALL = "bold #e05d5d"
MEMORY_ROWS = (("rss_bytes", "rss"), ("cuda_allocated_bytes", "alloc"))


FOUND = ("stall_period_steps", "rss_growth_bytes_per_step", "cuda_growth_bytes_per_step",
         "drift_fall_share")  # fmt: skip
"""The long run's metrics (`assess.long_run`), each None unless its detector found something."""


def long_run_found(frame: Frame) -> bool:
    """Whether the run has periodic stalls, memory that grows or speed that drifts."""
    metrics = frame.report.job.metrics
    return any(metrics.get(name) is not None for name in FOUND)


def shown_timeline(frame: Frame) -> Timeline | None:
    """The timeline to show, or None where there is none worth the rows."""
    timeline = frame.report.timeline
    if timeline is None or len(timeline.buckets) < 2:
        return None
    if timeline.buckets[-1].end_s < LONG_ENOUGH_S and not long_run_found(frame):
        return None
    return timeline


def spans(count: int, width: int) -> list[range]:
    """The buckets each of at most `width` columns stands for: several merged where there are
    more buckets than columns, each bucket repeated over equal columns where there are fewer."""
    if count <= 0 or width <= 0:
        return []
    if count >= width:
        return [range(c * count // width, (c + 1) * count // width) for c in range(width)]
    per = width // count
    return [range(b, b + 1) for b in range(count) for _ in range(per)]


def levels(values: Sequence[float | None], low: float, high: float) -> str:
    """Eight-level blocks of `values` between `low` and `high`; blanks where not measured."""
    steps = len(SPARKS) - 1
    return "".join(
        " " if v is None
        else SPARKS[round(min(max((v - low) / (high - low), 0.0), 1.0) * steps)] if high > low
        else SPARKS[steps]
        for v in values
    )  # fmt: skip


def column_values(buckets: Sequence[TimelineBucket], columns: list[range], field: str,
                  merge: str) -> list[float | None]:  # fmt: skip
    """Each column's figure: the mean (`merge="mean"`) or highest of its buckets' measured."""
    out: list[float | None] = []
    for span in columns:
        known = [v for b in span if (v := number(getattr(buckets[b], field))) is not None]
        if not known:
            out.append(None)
        else:
            out.append(sum(known) / len(known) if merge == "mean" else max(known))
    return out


def row(label: str, plot: Text, value: str, width: int) -> Text:
    line = Text(label.ljust(LABEL), style="bold")
    line.append_text(plot)
    line.append(" " + value[: max(width - LABEL - len(plot) - 1, 0)], style=MUTED)
    return line


def ends(values: list[float | None]) -> tuple[float, float] | None:
    known = [v for v in values if v is not None]
    return (known[0], known[-1]) if known else None


def timeline_lines(frame: Frame, timeline: Timeline, width: int) -> list[Text]:
    """Steps/s, the stall marks (where there were stalls), then each memory series measured."""
    buckets = timeline.buckets
    value = VALUE if width >= NARROW else NARROW_VALUE
    columns = spans(len(buckets), max(width - LABEL - value - 1, 4))
    rates = column_values(buckets, columns, "steps_per_s", "mean")
    known = [r for r in rates if r is not None]
    first_last = ends(rates)
    said = f"{first_last[0]:.3g} → {first_last[1]:.3g}" if first_last else "n/a"
    lines = [row("steps/s", Text(levels(rates, 0.0, max(known, default=0.0)), style=BUSY), said,
                 width)]  # fmt: skip
    stalled = [sum(buckets[b].stalls for b in span) > 0 for span in columns]
    if any(stalled):
        marks = Text("".join(STALL_MARK if s else " " for s in stalled), style=STALL)
        lines.append(row("stalls", marks, stall_words(frame, buckets), width))
    for field, label in MEMORY_ROWS:
        peaks = column_values(buckets, columns, field, "max")
        seen = [p for p in peaks if p is not None]
        if seen:
            plot = Text(levels(peaks, min(seen), max(seen)), style=WARM)
            first, last = seen[0], seen[-1]
            lines.append(row(label, plot, f"{size(first)} → {size(last)}", width))
    return lines


def stall_words(frame: Frame, buckets: Sequence[TimelineBucket]) -> str:
    period = number(frame.report.job.metrics.get("stall_period_steps"))
    count = sum(b.stalls for b in buckets)
    return f"{count} · every {period:.0f} steps" if period else f"{count} stalls"


def subtitle(frame: Frame, timeline: Timeline) -> str:
    """The span and a column's time; memory's growth and the time to its limit where found."""
    step = timeline.bucket_s
    column = f"{step:.3g} s" if step < 120 else f"{step / 60:.3g} min"
    words = f"0:00 → {duration(timeline.buckets[-1].end_s)} · {column} a column"
    metrics = frame.report.job.metrics
    for family in ("rss", "cuda"):
        rate = number(metrics.get(f"{family}_growth_bytes_per_step"))
        if rate is None:
            continue
        words += f" · {family} +{size(rate)}/step"
        left = number(metrics.get(f"{family}_growth_seconds_to_limit"))
        if left is not None:
            words += f", limit in ~{hours_or_minutes(left)}"
    return words


def hours_or_minutes(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    return f"{seconds / 60:.0f} min" if seconds < 2 * 3600 else f"{seconds / 3600:.1f} h"


class RunTimelinePanel(Panel):
    TITLE = "Over the run"
    DEFAULT_CSS = """
    RunTimelinePanel {
        display: none;
    }
    """

    def rows(self, width: int) -> int:
        """The rows its text takes at `width` cells: none where nothing is shown."""
        if self.frame is None or (timeline := shown_timeline(self.frame)) is None:
            return 0
        return len(timeline_lines(self.frame, timeline, width))

    def ranked_up(self) -> bool:
        """Whether the long run found something, so it gives way after the row of lists."""
        return self.frame is not None and long_run_found(self.frame)

    def watch_frame(self, frame: Frame | None) -> None:
        timeline = shown_timeline(frame) if frame is not None else None
        words = subtitle(frame, timeline) if frame is not None and timeline is not None else ""
        if self.border_subtitle != words:  # setting it, even unchanged, repaints the panel
            self.border_subtitle = words

    def draw(self, frame: Frame, width: int, height: int) -> RenderableType:
        timeline = shown_timeline(frame)
        if timeline is None:
            return Text("")
        return lines_to_text(timeline_lines(frame, timeline, width), height)
