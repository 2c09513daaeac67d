"""Step time: the stacked bar of where the step goes, and the history of that split.

Live, the bar is the latest window's breakdown and the history covers the whole run (one
column per tick, merged as the run grows), one sparkline per category, so a relaunch or a new
epoch that moves time between categories shows as a step in the lines. Offline, the history is
one column per step and a selector (left/right) picks the step the bar shows.
"""

from __future__ import annotations

from typing import ClassVar

from rich.console import RenderableType
from rich.text import Text
from textual.binding import Binding, BindingType
from textual.reactive import reactive

from torchtop.model.analysis import StepCost
from torchtop.tui.charts import duration, fit, legend, number, sparkline, stacked_bar
from torchtop.tui.frame import Frame, step_shares
from torchtop.tui.palette import CATEGORIES, MUTED
from torchtop.tui.timeline import Point
from torchtop.tui.widgets.panel import Panel, lines_to_text

LABEL_WIDTH = 2
SHARE_WIDTH = 5


class StepTimePanel(Panel, can_focus=True):
    TITLE = "Step time"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("left", "step(-1)", "Prev step", show=False),
        Binding("right", "step(1)", "Step", key_display="←/→"),
        Binding("pageup", "step(-10)", "Back 10 steps", show=False),
        Binding("pagedown", "step(10)", "On 10 steps", show=False),
        Binding("home", "step(-1_000_000)", "First step", show=False),
        Binding("end", "step(1_000_000)", "Last step", show=False),
        Binding("a", "all_steps", "All steps", show=False),
    ]

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # Live there is one bar (the newest window): `a` goes on to apply a fix.
        offline = self.frame is not None and not self.frame.live
        return offline if action in ("step", "all_steps") else True

    def on_focus(self) -> None:
        self.call_later(self.hint)  # `has_focus` is set after this handler

    def on_blur(self) -> None:
        self.call_later(self.hint)

    def watch_frame(self, frame: Frame | None) -> None:
        self.hint()

    def hint(self) -> None:
        """The border says what picks a step, true to where the focus is."""
        steps = self.frame.report.job.steps if self.frame is not None else ()
        if self.frame is None or self.frame.live or len(steps) < 2:
            hint = ""
        elif not self.has_focus:
            hint = "tab here to pick a step"
        elif self.selected is None:
            hint = "←/→ pick a step · Home/End"
        else:
            hint = "←/→ Home End PgUp/Dn · a: all"
        if self.border_subtitle != hint:  # setting it, even unchanged, repaints the panel
            self.border_subtitle = hint

    selected: reactive[int | None] = reactive(None)
    """Offline, the index of the step the bar shows; None for all steps."""

    def watch_selected(self) -> None:
        self.hint()
        self.refresh_drawing()

    def action_step(self, delta: int) -> None:
        """From all steps, → picks the first and ← the last; then each moves by `delta`."""
        steps = self.frame.report.job.steps if self.frame else ()
        if not steps:
            return
        last = len(steps) - 1
        if self.selected is None:
            self.selected = max(0, min(last, (delta - 1) if delta > 0 else last + delta + 1))
        else:
            self.selected = max(0, min(last, self.selected + delta))

    def action_all_steps(self) -> None:
        self.selected = None

    def draw(self, frame: Frame, width: int, height: int) -> RenderableType:
        shares, caption = self._shown(frame)
        lines = [caption, stacked_bar(shares, width), fitted_legend(shares, width)]
        room = height - len(lines)
        steps = frame.report.job.steps
        if not frame.live and 1 < len(steps) <= room:
            lines += step_bars(steps, width, self.selected)
        elif room >= 2 and frame.history:
            lines += history_lines(frame, width, room, self.selected)
        return lines_to_text(lines, height)

    def _shown(self, frame: Frame) -> tuple[dict[str, float], Text]:
        job = frame.report.job
        steps = job.steps
        if not frame.live and self.selected is not None and self.selected < len(steps):
            step = steps[self.selected]
            return step_shares(step.parts_us, step.duration_us), step_caption(step, steps)
        mean = number(job.metrics.get("step_mean_ms"))
        count = number(job.metrics.get("steps_count")) if frame.live else len(steps)
        samples = job.metrics.get("stack_samples")
        if count is None and isinstance(samples, int):
            caption = Text(f"{samples} stack samples, no step timed", style="bold")
        else:
            # Live, the figures are of every step watched; the breakdown may cover fewer.
            caption = Text(f"all {count or 0:.0f} steps", style="bold")
        if mean is not None:
            caption.append(f" · {mean:.1f} ms")
            p95 = number(job.metrics.get("step_p95_ms"))
            caption.append(f" · p95 {p95:.1f}" if p95 is not None else "")
        if frame.live and not job.infos:
            caption.append(" · step timing only", style=MUTED)
        return dict(job.breakdown), caption


def step_caption(step: StepCost, steps: tuple[StepCost, ...]) -> Text:
    caption = Text(f"step #{step.number}", style="bold")
    caption.append(f" of #{steps[0].number}-#{steps[-1].number} · {step.duration_us / 1000:.1f} ms")
    return caption


def step_bars(steps: tuple[StepCost, ...], width: int, selected: int | None) -> list[Text]:
    """Offline, when every step has a row: each step's own stacked bar, the selected marked."""
    lines = []
    for index, step in enumerate(steps):
        mark = "▶" if index == selected else " "
        line = Text(f"{mark}#{step.number:<4}{step.duration_us / 1000:7.1f} ms ",
                    style="bold" if index == selected else MUTED)  # fmt: skip
        bar_width = max(width - len(line), 4)
        line.append_text(stacked_bar(step_shares(step.parts_us, step.duration_us), bar_width))
        lines.append(line)
    return lines


def fitted_legend(shares: dict[str, float], width: int) -> Text:
    """As many legend entries as fit on one line."""
    for limit in range(len(CATEGORIES), 0, -1):
        text = legend(shares, limit)
        if len(text) <= width:
            return text
    return legend(shares, 1)


def history_lines(frame: Frame, width: int, rows: int, selected: int | None) -> list[Text]:
    points = frame.history
    plot = max(width - LABEL_WIDTH - SHARE_WIDTH, 4)
    lines = [history_caption(frame, points, plot)]
    # The categories that matter now first; those that mattered only earlier after them.
    ranked = sorted(
        CATEGORIES,
        key=lambda c: (
            -points[-1].shares.get(c.key, 0.0),
            -max(p.shares.get(c.key, 0.0) for p in points),
        ),
    )
    shown = [c for c in ranked if any(p.shares.get(c.key, 0.0) >= 0.005 for p in points)]
    marks = selected is not None and not frame.live
    for category in shown[: rows - 1 - int(marks)]:
        values = spread([p.shares.get(category.key, 0.0) for p in points], plot, frame.live)
        line = Text(category.letter.ljust(LABEL_WIDTH), style=f"bold {category.colour}")
        line.append_text(sparkline(values, plot, top=1.0, style=category.colour))
        line.append(f"{points[-1].shares.get(category.key, 0.0):>5.0%}")
        lines.append(line)
    if marks and selected is not None:
        lines.append(Text(" " * LABEL_WIDTH + selector(len(points), plot, selected)))
    return lines


def history_caption(frame: Frame, points: tuple[Point, ...], plot: int) -> Text:
    steps = frame.report.job.steps
    if not frame.live:
        span = f"#{steps[0].number} → #{steps[-1].number}" if steps else ""
        return Text(f"one column per step, {span}", style=MUTED)
    text = Text(f"history 0:00 → {duration(points[-1].elapsed_s)}", style=MUTED)
    relaunches = sum(1 for p in points if p.marker == "relaunch")
    if relaunches:
        text.append(f" · {relaunches} relaunch{'es' if relaunches > 1 else ''}", style="bold")
    return text


def spread(values: list[float], width: int, live: bool) -> list[float | None]:
    """Live: the newest at the right edge; offline: each step stretched over equal columns."""
    if live or len(values) >= width:
        return fit(values, width)
    per = width // len(values)
    return [v for v in values for _ in range(per)]


def selector(count: int, width: int, selected: int) -> str:
    """A mark under the selected step's columns (the plot is right-aligned)."""
    if count >= width:
        return " " * (selected * width // count) + "▲"
    per = width // count
    return " " * (width - per * count + selected * per + per // 2) + "▲"
