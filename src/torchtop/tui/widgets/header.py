"""The two header lines: which job, and how fast it goes (with its trend).

Line one names the job (its command, its PID, or the trace files) and the dashboard's state
(live, paused, finished, offline). Line two: ranks, uptime, step (and what marks the steps),
steps/s with an arrow for its trend and a sparkline of its history, and samples/s when the
batch size is known; attach's native sampler, its pace and its own CPU; a node followed
through `--serve` that stopped answering, with when it was last seen.

While a trial (or a revert) has the job stopped (`stopped_since_s`), its last rate is not
shown as live: line two says the job is stopped and for how long, redrawn every second by the
header itself (the job's figures do not move then), and its last rate as the last one.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime

from rich.console import RenderableType
from rich.text import Text
from textual.reactive import reactive

from torchtop.assess.snapshot import STEP_SIGNAL_LABELS
from torchtop.tui.charts import duration, sparkline
from torchtop.tui.frame import Frame
from torchtop.tui.palette import MUTED, SEVERITY_COLOUR
from torchtop.tui.widgets.panel import Panel, lines_to_text

TREND_POINTS = 5
TREND_THRESHOLD = 0.05


def trend(rates: Sequence[float | None]) -> str:
    """↑, ↓ or → comparing the newest few rates with the few before them."""
    known = [r for r in rates if r is not None]
    recent, before = known[-TREND_POINTS:], known[-2 * TREND_POINTS : -TREND_POINTS]
    if not recent or not before:
        return "→"
    now, then = sum(recent) / len(recent), sum(before) / len(before)
    if then > 0 and now > then * (1 + TREND_THRESHOLD):
        return "↑"
    if then > 0 and now < then * (1 - TREND_THRESHOLD):
        return "↓"
    return "→"


class JobHeader(Panel):
    paused: reactive[bool] = reactive(False)
    finishing: reactive[bool] = reactive(False)
    stopped_since_s: reactive[float | None] = reactive(None)
    """Since when (`clock`) a trial or a revert has the job stopped; None while it runs."""
    stopped_for = "the trial"

    def __init__(self, id: str | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__(id=id)
        self.clock = clock

    def on_mount(self) -> None:
        super().on_mount()
        self.set_interval(1.0, self._tick)

    def _tick(self) -> None:
        if self.stopped_since_s is not None:
            self.refresh_drawing()

    def watch_stopped_since_s(self) -> None:
        self.refresh_drawing()

    def watch_paused(self) -> None:
        self.refresh_drawing()

    def watch_finishing(self) -> None:
        self.refresh_drawing()

    def draw(self, frame: Frame, width: int, height: int) -> RenderableType:
        return lines_to_text([self._title(frame, width), self._numbers(frame, width)], height)

    def _state(self, frame: Frame) -> tuple[str, str]:
        if self.finishing:
            return "FINISHING", "bold #e0b000"
        if frame.live and frame.finished:  # nothing more comes: a pause would hold nothing
            return "FINISHED", "bold #9a9a9a"
        if self.paused:
            return "PAUSED", "bold reverse #e0b000"
        if not frame.live:
            return "OFFLINE", "bold #5f87ff"
        return "LIVE", "bold #5fc75f"

    def _title(self, frame: Frame, width: int) -> Text:
        state, style = self._state(frame)
        kind = frame.report.source_kind
        head = Text.assemble(("torchtop ", "bold"), (kind, "bold"), " · ")
        room = max(width - len(head) - len(state) - 2, 4)
        job = frame.job if len(frame.job) <= room else frame.job[: room - 1] + "…"
        head.append(job)
        head.append(" " * max(width - len(head) - len(state), 1))
        head.append(state, style=style)
        return head

    def _numbers(self, frame: Frame, width: int) -> Text:
        ranks = frame.ranks_count
        parts = [f"{ranks} rank{'s' if ranks != 1 else ''}"]
        if frame.elapsed_s is not None:
            parts.append(f"up {duration(frame.elapsed_s)}")
        steps = frame.report.job.steps
        if frame.step is not None:
            signal = STEP_SIGNAL_LABELS.get(str(frame.step_signal))
            parts.append(f"step {frame.step}" + (f" by {signal}" if signal else ""))
        elif steps:
            parts.append(f"steps #{steps[0].number}-#{steps[-1].number}")
        if self.stopped_since_s is not None and frame.live:
            return self._stopped(parts, frame)
        text = Text(" · ".join(parts), style=MUTED)
        rates = [p.steps_per_s for p in frame.history] if frame.live else []
        if not frame.live and frame.report.job.devices:
            text.append(f" · {frame.report.job.devices[0].name}")
        if frame.steps_per_s is not None:
            text.append(" · ")
            text.append(f"{frame.steps_per_s:.2f} steps/s", style="bold")
            if frame.live:
                text.append(f" {trend(rates)}", style="bold")
        if frame.samples_per_s is not None:
            text.append(f" · {frame.samples_per_s:,.0f} samples/s")
        if frame.live and frame.report.sampler is not None:
            text.append(f" · {frame.report.sampler.words()}")
        for node in frame.report.nodes:  # followed through `--serve`: one that fell silent
            if node.answering is False:
                text.append(" · ")
                text.append(
                    f"node {node.name} {silence(node.last_seen_epoch_s)}",
                    style=SEVERITY_COLOUR["medium"],
                )
        room = width - len(text) - 1
        if frame.live and room >= 8 and any(r is not None for r in rates):
            text.append(" ")
            known = [r for r in rates if r is not None]
            # Headroom above the best rate, so a steady rate reads as a line, not a full bar.
            text.append_text(sparkline(rates, room, top=max(known) * 1.25, style="#5fc75f"))
        return text

    def _stopped(self, parts: list[str], frame: Frame) -> Text:
        """`1 rank · up 1:02 · job stopped for the trial 0:23 · last 3.56 steps/s · step 28`:
        the stopped clock early, so that 80 columns never cut it."""
        assert self.stopped_since_s is not None
        head = 2 if frame.elapsed_s is not None else 1
        text = Text(" · ".join(parts[:head]) + " · ", style=MUTED)
        stopped = duration(self.clock() - self.stopped_since_s)
        text.append(f"job stopped for {self.stopped_for} {stopped}", style="bold")
        if frame.steps_per_s is not None:
            text.append(f" · last {frame.steps_per_s:.2f} steps/s", style=MUTED)
        for part in parts[head:]:
            text.append(f" · {part}", style=MUTED)
        return text


def silence(last_seen_epoch_s: float | None) -> str:
    if last_seen_epoch_s is None:
        return "never answered"
    seen = datetime.fromtimestamp(last_seen_epoch_s, UTC).strftime("%H:%M:%S")
    return f"not answering since {seen} UTC"
