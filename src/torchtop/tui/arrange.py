"""The dashboard's sections sized to the terminal (`tui.layout.fit`), folded where they must be.

Top to bottom: the verdict row, the fix list (it takes what is left), the run's timeline, the
row of lists, the trial and the job's ending, each section followed by the `FoldedLine` that
stands for it when folded. Called whenever something changes what a section needs (a frame, a
trial's progress, the job's end, a resize, the filter bar, `f`); it sets heights and what shows,
nothing else.
"""

from __future__ import annotations

from textual.geometry import Size
from textual.screen import Screen
from textual.widget import Widget

from torchtop.tui.layout import MIDDLE_LEAST, Want, fit, folded
from torchtop.tui.widgets.folded import FoldedLine
from torchtop.tui.widgets.jobend import JobEndPanel
from torchtop.tui.widgets.panel import FOCUS_MARK
from torchtop.tui.widgets.trial import TrialPanel
from torchtop.tui.widgets.wholerun import RunTimelinePanel

HEADER_ROWS = 2
FOOTER_ROWS = 1
TOP_ROWS = (8, 11)
"""The verdict row on a short terminal, and on a tall one (`-tall`: 36 rows and more)."""
BOTTOM_ROWS = (5, 6, 10)
"""The row of lists: its fewest rows, and its rows on a short and on a tall terminal."""
TRIAL_MOST = 8
JOBEND_MOST = 11
JOBEND_LEAST = 5
"""The ending's line and the last lines of the traceback, at fewest three."""
KEEP = {"bottom": 0, "timeline": 1, "trial": 2, "jobend": 3, "top": 5}
"""Which folds first: the lists, then the timeline, the trial, the ending, the verdict last."""
TIMELINE_IDLE_KEEP = -1
"""The timeline's rank where the long run found nothing: it folds before the lists."""
MIDDLE_MORE = Want("middle", 1, 0, 4)
"""The fix list's row more than its fewest, for a first fix whole (its prediction too):
before the job's ending grows past its fewest rows, after the verdict row."""
BORDERS = 2
SIDES = 4
"""A bordered panel's cells left and right of its text: its border and its padding."""


def section_wants(screen: Screen[object], tall: bool) -> list[Want]:
    """What each shown section needs, in the screen's order."""
    wants = [Want("top", TOP_ROWS[tall], TOP_ROWS[0], KEEP["top"])]
    timeline = screen.query_one(RunTimelinePanel)
    if rows := timeline.rows(max(screen.size.width - SIDES, 1)):
        keep = KEEP["timeline"] if timeline.ranked_up() else TIMELINE_IDLE_KEEP
        wants.append(Want("timeline", rows + BORDERS, rows + BORDERS, keep))
    bottom = screen.query_one("#bottom")
    if any(child.display for child in bottom.children):
        wants.append(Want("bottom", BOTTOM_ROWS[1 + tall], BOTTOM_ROWS[0], KEEP["bottom"]))
    trial = screen.query_one(TrialPanel)
    if trial.view is not None:
        rows = min(text_rows(trial, screen.size) + BORDERS, TRIAL_MOST)
        wants.append(Want("trial", rows, rows, KEEP["trial"]))
    ending = screen.query_one(JobEndPanel)
    if ending.ending is not None:
        rows = min(ending.whole_rows() + BORDERS, JOBEND_MOST)
        wants.append(Want("jobend", rows, min(rows, JOBEND_LEAST), KEEP["jobend"]))
    return wants


def text_rows(widget: Widget, size: Size) -> int:
    """The rows a bordered panel's text takes, wrapped to the screen's width."""
    return widget.get_content_height(size, size, max(size.width - SIDES, 1))


def arrange(screen: Screen[object], opened: str | None, bars: int) -> list[str]:
    """Size and fold the sections for `screen`'s height, less the header, the footer and
    `bars` more lines (the filter bar); the names of those folded."""
    tall = screen.has_class("-tall")
    wants = section_wants(screen, tall)
    room = screen.size.height - HEADER_ROWS - FOOTER_ROWS - bars - MIDDLE_LEAST
    heights = fit(room, [*wants, MIDDLE_MORE], opened)
    gone = folded(heights, wants)
    for want in wants:
        show(screen, want.name, heights[want.name], want.name in gone)
    for name in set(KEEP) - {want.name for want in wants}:
        screen.query_one(f"#{name}").display = False
        screen.query_one(f"#{name}-folded", FoldedLine).fold([])
    return gone


def show(screen: Screen[object], name: str, height: int, gone: bool) -> None:
    section = screen.query_one(f"#{name}")
    line = screen.query_one(f"#{name}-folded", FoldedLine)
    if gone and section.has_focus_within:
        screen.query_one("#fix-options").focus()  # the focus must not stay in a hidden box
    section.display = not gone
    line.fold(titles(section) if gone else [])
    if not gone:
        section.styles.height = height
    if isinstance(section, JobEndPanel):
        section.rows = height - BORDERS


def titles(section: Widget) -> list[str]:
    """What a folded section holds: its own title, or its shown panels' titles."""
    own = str(section.border_title or "")
    if own:
        return [own]
    shown = [child for child in section.children if child.display]
    return [str(child.border_title or "").removeprefix(FOCUS_MARK) for child in shown]
