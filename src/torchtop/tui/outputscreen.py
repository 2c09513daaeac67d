"""`o`: the job's own output, live: the tail of its log, followed as it grows.

A thread worker reads the log every `POLL_S` (`runs.output_tail.LogTail`: the file's end, then
only what was appended) and posts the new lines; the screen keeps the newest `KEEP_LINES` and
shows those that pass its filters: the `/` text, stderr only (`e`), one rank (`k`, where the
lines carry torchrun's `[default1]:` prefix). Stderr lines carry a mark in the error colour
where the log says which lines they are (the merged `job.log`'s stderr marks, or `stderr.log`
itself); the title says the log's path. The view follows the end while it is at the end; once
scrolled up it stays, and `end` takes it back. Each poll asks `find_log` again, so a job started
again after a trial is followed into its new folder, with a line saying so.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import ClassVar

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.events import Resize
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Input, RichLog

from torchtop.runs.output_tail import LogTail, OutputLine, TailRead
from torchtop.tui.palette import MUTED
from torchtop.tui.widgets.filterbar import FilterBar, FilterClosed
from torchtop.tui.widgets.keysfooter import KeysFooter

POLL_S = 0.5
KEEP_LINES = 20_000
STDERR_MARK = "▌"
STDERR_STYLE = "#ff8787"


class OutputRead(Message):
    """What one poll of the log found (posted by the reading thread)."""

    def __init__(self, path: Path | None, read: TailRead, switched: bool) -> None:
        super().__init__()
        self.path = path
        self.read = read
        self.switched = switched


def line_text(line: OutputLine) -> Text:
    if line.offset < 0:  # the screen's own note (the job started again)
        return Text(line.text, style=MUTED)
    if line.stderr:
        return Text.assemble((STDERR_MARK, STDERR_STYLE), (line.text, STDERR_STYLE))
    return Text.assemble(" ", line.text)


class OutputLog(RichLog):
    """A log that stays at its end across a resize while it follows (the footer's rows are
    laid out after the first lines are drawn, and take the last of them from view)."""

    following = True
    """The view is at the end, so new lines scroll it (False once scrolled up)."""

    def on_resize(self, event: Resize) -> None:
        super().on_resize(event)
        if self.following:
            self.call_after_refresh(self.scroll_end, animate=False)


class OutputScreen(Screen[None]):
    DEFAULT_CSS = """
    OutputScreen #output-log {
        height: 1fr;
        border: round $accent;
        border-title-color: $text;
        border-title-style: bold;
        border-subtitle-color: $text-muted;
    }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,o,q", "close", "Back"),
        Binding("slash", "filter", "Filter"),
        Binding("e", "stderr_only", "Stderr"),
        Binding("k", "next_rank", "Rank"),
    ]

    def __init__(self, find_log: Callable[[], Path | None], poll_s: float = POLL_S) -> None:
        super().__init__()
        self.find_log = find_log
        self.poll_s = poll_s
        self.path = find_log()
        self.lines: deque[OutputLine] = deque(maxlen=KEEP_LINES)
        self.filter_text = ""
        self.stderr_only = False
        self.rank: int | None = None
        self.ranks: set[int] = set()
        self.skipped_bytes = 0
        self.reads = 0
        """Polls answered so far (tests wait on it)."""
        self._stop = threading.Event()

    def compose(self) -> ComposeResult:
        log = OutputLog(id="output-log", max_lines=KEEP_LINES, min_width=1, auto_scroll=False)
        log.border_title = self.title_text()
        yield log
        yield FilterBar()
        yield KeysFooter()

    def on_mount(self) -> None:
        log = self.query_one(RichLog)
        log.focus()
        # Only a move of the view says whether it is at the end: new lines grow the log under
        # a view that follows them, before the scroll that shows them has happened.
        self.watch(log, "scroll_y", self.scrolled, init=False)
        self.follow()

    def scrolled(self, scroll_y: float) -> None:
        log = self.query_one(OutputLog)
        log.following = scroll_y >= log.max_scroll_y

    def on_unmount(self) -> None:
        self._stop.set()

    @work(thread=True, exclusive=True, group="output", name="output")
    def follow(self) -> None:
        """Read the log now, then every `poll_s`, until the screen closes."""
        path = self.path
        tail = LogTail(path) if path is not None else None
        while True:
            found = self.find_log()
            switched = found is not None and found != path
            if switched and found is not None:
                path, tail = found, LogTail(found)
            if tail is not None:
                self.post_message(OutputRead(path, tail.read(), switched))
            if self._stop.wait(self.poll_s):
                return

    def on_output_read(self, message: OutputRead) -> None:
        read = message.read
        new = list(read.lines)
        if message.switched or read.restarted:
            what = "the job was started again" if message.switched else "the log was truncated"
            note = OutputLine(f"── {what}: {message.path} ──", -1)
            new.insert(0, note)
            self.path = message.path
        self.skipped_bytes += read.skipped_bytes
        self.lines.extend(new)
        ranks = {line.rank for line in new if line.rank is not None}
        if ranks - self.ranks:
            self.ranks |= ranks
            self.refresh_bindings()
        self.reads += 1
        self.write(self.shown(new), scroll_end=self.query_one(OutputLog).following)
        if new or read.skipped_bytes or self.reads == 1:
            self.retitle()

    def shown(self, lines: Iterable[OutputLine]) -> list[OutputLine]:
        needle = self.filter_text.casefold()
        return [
            line
            for line in lines
            if (not needle or needle in line.text.casefold())
            and (not self.stderr_only or line.stderr)
            and (self.rank is None or line.rank == self.rank)
        ]

    def write(self, lines: list[OutputLine], scroll_end: bool) -> None:
        if lines:
            log = self.query_one(RichLog)
            log.write(Text("\n").join(line_text(line) for line in lines), scroll_end=scroll_end)
            if scroll_end:  # a write before the log knows its size scrolls nothing
                self.call_after_refresh(log.scroll_end, animate=False)

    def redraw(self) -> None:
        """Every kept line again, through the filters (a filter changed)."""
        log = self.query_one(OutputLog)
        log.clear()
        log.following = True
        self.write(self.shown(self.lines), scroll_end=True)
        self.retitle()

    def title_text(self) -> str:
        if self.path is None:
            return "Job output · none kept"
        return f"Job output · {self.path}"

    def retitle(self) -> None:
        log = self.query_one(RichLog)
        log.border_title = self.title_text()
        parts = [f"{len(self.shown(self.lines))} of {len(self.lines)} lines"]
        if not self.lines:
            parts = ["the job has written nothing yet"]
        if any(line.stderr for line in self.lines):
            parts.append(f"{STDERR_MARK} stderr")
        if self.stderr_only:
            parts.append("stderr only")
        if self.rank is not None:
            parts.append(f"rank {self.rank}")
        if self.filter_text:
            parts.append(f"/{self.filter_text}")
        if self.skipped_bytes:
            parts.append(f"{self.skipped_bytes:,} bytes skipped (too fast to follow)")
        log.border_subtitle = " · ".join(parts)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "next_rank":
            return bool(self.ranks)
        return True

    def action_close(self) -> None:
        self.dismiss(None)

    def action_filter(self) -> None:
        self.query_one(FilterBar).open("the output", self.filter_text)

    def action_stderr_only(self) -> None:
        self.stderr_only = not self.stderr_only
        self.redraw()

    def action_next_rank(self) -> None:
        """All ranks, then each rank seen in turn, then all again."""
        order: list[int | None] = [None, *sorted(self.ranks)]
        self.rank = order[(order.index(self.rank) + 1) % len(order)]
        self.redraw()

    def on_input_changed(self, message: Input.Changed) -> None:
        if message.input.id == "filter":
            self.filter_text = message.value
            self.redraw()

    def on_filter_closed(self, message: FilterClosed) -> None:
        message.stop()
        self.query_one(FilterBar).display = False
        if not message.kept:
            self.filter_text = ""
            self.redraw()
        self.query_one(RichLog).focus()
