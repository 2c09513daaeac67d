"""The dashboard app, and the two ways in: `run_live` (run, attach, demo) and `run_view` (view).

Live, a thread worker asks the snapshot source for a snapshot whenever the pacer allows (once a
second), turns it into a `Frame` off the UI thread and posts it; the app hands each frame down
to the panels ("attributes down, messages up"). Quitting, or a snapshot saying the run is over,
stops the worker, waits for it, and returns the source's final report. Widgets never call the
source or collectors; only the tick thread does.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any, ClassVar

from textual import work
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal
from textual.screen import Screen
from textual.widgets import Footer, OptionList

from torchtop.model.findings import Fix
from torchtop.model.report import Report
from torchtop.runs.state import RunState
from torchtop.tui.details import FixDetailsScreen
from torchtop.tui.frame import Frame, FrameBuilder, offline_frame
from torchtop.tui.helpscreen import HelpScreen
from torchtop.tui.styles import CSS
from torchtop.tui.ticking import FrameMessage, IntervalPacer, Pacer, SnapshotSource
from torchtop.tui.widgets.devices import DevicesPanel
from torchtop.tui.widgets.fixlist import FixChosen, FixList
from torchtop.tui.widgets.header import JobHeader
from torchtop.tui.widgets.panel import Panel
from torchtop.tui.widgets.ranks import RanksPanel
from torchtop.tui.widgets.stacks import StacksPanel
from torchtop.tui.widgets.steptime import StepTimePanel
from torchtop.tui.widgets.tops import TopsPanel
from torchtop.tui.widgets.verdict import VerdictPanel


class DashboardScreen(Screen[None]):
    """The main screen: its own Tab binding, so the footer shows how to move between panels."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("tab", "app.focus_next", "Next panel"),
        Binding("shift+tab", "app.focus_previous", "Previous panel", show=False),
    ]


TICKS_JOIN_S = 30.0
"""How long quitting waits for a tick in progress (a large profiler window being analysed)."""

ApplyHook = Callable[[Fix], None]


class Dashboard(App[Report | None]):
    """Live with a `source` (and a `pacer`), offline with a ready `frame`."""

    TITLE = "torchtop"
    ENABLE_COMMAND_PALETTE = False
    CSS = CSS
    # Textual annotates these as instance variables, so they cannot be ClassVar here.
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (120, "-wide")]  # noqa: RUF012
    VERTICAL_BREAKPOINTS = [(0, "-short"), (36, "-tall")]  # noqa: RUF012
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("question_mark", "help", "Help"),
        Binding("q", "quit", "Quit"),
        Binding("ctrl+c", "quit", "Quit", show=False, priority=True),
        Binding("p", "pause", "Pause"),
    ]

    def __init__(
        self,
        source: SnapshotSource | None = None,
        *,
        frame: Frame | None = None,
        pacer: Pacer | None = None,
        on_apply: ApplyHook | None = None,
    ) -> None:
        super().__init__()
        if (source is None) == (frame is None):
            raise ValueError("a Dashboard shows either a live source or an offline frame")
        self.source = source
        self.pacer: Pacer = pacer or IntervalPacer()
        self.on_apply = on_apply
        self.builder = FrameBuilder()
        self.latest = frame
        self.live = source is not None
        self.recorded = self.live or bool(frame and frame.recorded)
        self.paused = False
        self.frames_received = 0
        self.frames_shown = 0
        self.finishing = False
        self.ticks_stopped = threading.Event()
        if source is None:
            self.ticks_stopped.set()

    def compose(self) -> ComposeResult:
        yield JobHeader(id="header")
        with Horizontal(id="top"):
            yield VerdictPanel(id="verdict", classes="panel")
            yield StepTimePanel(id="steptime", classes="panel")
        with Horizontal(id="middle"):
            yield FixList(id="fixes", classes="panel")
            if self.recorded:
                yield DevicesPanel(classes="panel")
            else:
                yield TopsPanel(beside_ranks=False, classes="panel")
        with Horizontal(id="bottom"):
            if self.recorded:
                yield StacksPanel(id="stacks", classes="panel")
            yield RanksPanel(id="ranks", classes="panel")
            if self.recorded:
                yield TopsPanel(beside_ranks=True, classes="panel")
        yield Footer()

    def get_default_screen(self) -> Screen[Any]:
        return DashboardScreen(id="_default")

    def on_mount(self) -> None:
        self.query_one(StepTimePanel).can_focus = not self.live
        self.query_one("#fix-options", OptionList).focus()
        if self.latest is not None:
            self.show(self.latest)
        if self.source is not None:
            self.tick_loop()

    @work(thread=True, exclusive=True, group="ticks", name="ticks")
    def tick_loop(self) -> None:
        assert self.source is not None
        try:
            while self.pacer.wait():
                frame = self.builder.build(self.source.tick())
                self.post_message(FrameMessage(frame))
                if frame.finished:
                    break
        finally:
            self.ticks_stopped.set()

    def on_unmount(self) -> None:
        # However the app ends, the tick thread must not wait for a tick that never comes.
        self.pacer.stop()

    def on_frame_message(self, message: FrameMessage) -> None:
        self.frames_received += 1
        self.latest = message.frame
        if not self.paused:
            self.show(message.frame)
        if message.frame.finished:
            self.finish()

    def show(self, frame: Frame) -> None:
        """Hand the frame down to every panel; each redraws itself from it."""
        self.frames_shown += 1
        for panel in self.query(Panel):
            panel.frame = frame
        self.query_one(FixList).frame = frame
        bottom = self.query_one("#bottom")
        bottom.display = any(child.display for child in bottom.children)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # Nothing to pause offline: the key is neither active nor shown in the footer.
        return self.live if action == "pause" else True

    def action_pause(self) -> None:
        self.paused = not self.paused
        self.query_one(JobHeader).paused = self.paused
        if not self.paused and self.latest is not None:
            self.show(self.latest)

    def action_help(self) -> None:
        self.push_screen(HelpScreen())

    def on_fix_chosen(self, message: FixChosen) -> None:
        frame = self.latest
        if frame is None:
            return
        fix = message.ranked.fix
        screen = FixDetailsScreen(
            message.ranked, frame.command, frame.cli_options, self.on_apply is not None
        )
        self.push_screen(screen, callback=lambda result: self.apply(fix, result))

    def apply(self, fix: Fix, result: str | None) -> None:
        if result == "apply" and self.on_apply is not None:
            self.on_apply(fix)

    async def action_quit(self) -> None:
        self.finish()

    def finish(self) -> None:
        if not self.finishing:
            self.finishing = True
            self.query_one(JobHeader).finishing = self.live
            self.finish_and_exit()

    @work(exclusive=True, group="finish")
    async def finish_and_exit(self) -> None:
        """Stop ticking, wait for a tick in progress, then end with the source's final report."""
        self.pacer.stop()
        if self.source is None:
            self.exit(None)
            return
        await asyncio.to_thread(self.ticks_stopped.wait, TICKS_JOIN_S)
        self.exit(await asyncio.to_thread(self.source.finish))


def run_live(
    monitor: SnapshotSource, interval_s: float = 1.0, on_apply: ApplyHook | None = None
) -> Report:
    """The dashboard over a live run until the user quits or the run ends; the final report.

    `on_apply`, when given, is called with the fix the user asks to apply (the `a` key in a
    fix's details); without it that key is shown dimmed."""
    pacer = IntervalPacer(interval_s)
    app = Dashboard(monitor, pacer=pacer, on_apply=on_apply)
    result = app.run()
    if isinstance(result, Report):
        return result
    # The app ended another way (an error): stop ticking before the source's last read.
    pacer.stop()
    app.ticks_stopped.wait(TICKS_JOIN_S)
    return monitor.finish()


def run_view(report: Report, state: RunState | None = None) -> None:
    """The dashboard over saved traces, or a recorded run folder (`state` adds its samples)."""
    Dashboard(frame=offline_frame(report, state)).run()
