"""The footer of a dashboard that stays until the user ends it: the keys, then at the right
how long it has run and that `q` ends it.

`torchtop demo` once closed its dashboard by itself after 30 s, often while the user was
reading the fix; now it stays, so its footer says both that it is still running and how to
leave. The clock is the dashboard's own (since it opened), read each second, not the job's
uptime (the header's "up"), which restarts when a trial relaunches the job. Where the keys leave
too little room on the row (80 columns), it is only `running 0:17`: `q Quit` is in the keys;
where they leave none, it gives way to them (the header's LIVE and "up" say the job runs).
"""

from __future__ import annotations

import time

from textual.widget import Widget
from textual.widgets import Static

from torchtop.tui.charts import duration
from torchtop.tui.widgets.keysfooter import KeysFooter

CLOCK_INTERVAL_S = 1.0


def clock_text(elapsed_s: float, short: bool = False) -> str:
    return f"running {duration(elapsed_s)}" + ("" if short else " · q ends it")


CLOCK_WIDTH = len(clock_text(3600.0)) + 2
"""Its room in the footer: up to an hour and more, with its padding."""
SHORT_CLOCK_WIDTH = len(clock_text(3600.0, short=True)) + 2


class RunClock(Static):
    DEFAULT_CSS = """
    RunClock {
        dock: right;
        width: auto;
        padding: 0 1;
        color: $footer-description-foreground;
    }
    """

    def __init__(self, started_s: float, short: bool = False) -> None:
        super().__init__(clock_text(time.monotonic() - started_s, short), id="run-clock")
        self.started_s = started_s
        self.short = short

    def on_mount(self) -> None:
        self.set_interval(CLOCK_INTERVAL_S, self.tick)

    def tick(self) -> None:
        self.update(clock_text(time.monotonic() - self.started_s, self.short))


class ClockFooter(KeysFooter):
    """The keys footer (it recomposes when the keys change) with a `RunClock` at its end."""

    def __init__(self, started_s: float) -> None:
        super().__init__()
        self.started_s = started_s

    def trailer(self, room: int) -> tuple[Widget, int] | None:
        if room >= CLOCK_WIDTH:
            return RunClock(self.started_s), CLOCK_WIDTH
        return RunClock(self.started_s, short=True), SHORT_CLOCK_WIDTH
