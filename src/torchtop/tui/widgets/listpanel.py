"""A panel whose lines are a list: focused by tab, scrolled, sorted and filtered.

Each list panel turns the frame into `Row`s (and header lines); this base keeps the user's
place in them: the cursor (highlighted while focused), the first line shown, the sort column
and the filter text. Arrows, PgUp/PgDn, Home/End and the mouse wheel move; `s` cycles the sort
column and `S` turns its order; `/` asks the app for the filter input (`FilterAsked`, a message
up) and the app sets `filter_text` back on the panel (an attribute down); Esc clears it; Enter
posts `RowChosen` with the row's whole text, which the app shows in full (a long kernel name,
a rank's last stack). Panels without a cursor (`CURSOR = False`) just scroll.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from rich.console import RenderableType
from rich.text import Text
from textual import events
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.reactive import reactive

from torchtop.tui.frame import Frame
from torchtop.tui.palette import MUTED
from torchtop.tui.widgets.panel import FOCUS_MARK, Panel, lines_to_text

PAGE_ROWS = 10
"""How far PgUp/PgDn move where the panel's own height is unknown (never drawn yet)."""
WHEEL_ROWS = 3


@dataclass(frozen=True)
class Row:
    line: Text
    keys: tuple[object, ...] = ()
    """One sort key per entry of the panel's `SORTS`."""
    text: str = ""
    """The whole row, for the filter and the details (Enter); the line's own text if empty."""
    group: str = ""
    """Rows of a group stay together under the group's heading line (sorting sorts within)."""
    under: tuple[Text, ...] = ()
    """Lines shown under the row's own, part of it (a dead rank's last stack)."""

    @property
    def whole(self) -> str:
        return self.text or self.line.plain


@dataclass(frozen=True)
class Sort:
    name: str
    descending: bool = False


class RowChosen(Message):
    def __init__(self, title: str, text: str) -> None:
        super().__init__()
        self.title = title
        self.text = text


class FilterAsked(Message):
    def __init__(self, panel: ListPanel) -> None:
        super().__init__()
        self.panel = panel


class ListPanel(Panel, can_focus=True):
    SORTS: ClassVar[tuple[Sort, ...]] = ()
    CURSOR: ClassVar[bool] = True
    BORDERED: ClassVar[bool] = True
    ABOUT: ClassVar[str] = ""
    """Without a border (a list inside another panel's box), the heading line carries the
    focus mark and the caption that the border's title and subtitle carry otherwise."""
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up", "move(-1)", "Up", show=False),
        Binding("down", "move(1)", "Down", show=False),
        Binding("pageup", "page(-1)", "Page up", show=False),
        Binding("pagedown", "page(1)", "Page down", show=False),
        Binding("home", "move(-1_000_000)", "First", show=False),
        Binding("end", "move(1_000_000)", "Last", show=False),
        Binding("enter", "choose", "Whole row"),
        Binding("s", "sort", "Sort"),
        Binding("S", "reverse", "Reverse sort", show=False),
        Binding("slash", "filter", "Filter"),
        Binding("escape", "clear_filter", "Clear filter", show=False),
    ]

    sort_index: reactive[int | None] = reactive(None)
    """Which of `SORTS` orders the rows; None: the panel's own order."""
    reversed_order: reactive[bool] = reactive(False)
    filter_text: reactive[str] = reactive("")

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.cursor = 0
        self.top = 0
        self.count = 0
        self.page = PAGE_ROWS
        self.shown: list[Row] = []

    def rows(self, frame: Frame, width: int, height: int) -> tuple[list[Text], list[Row]]:
        """The heading lines (always shown) and the rows; `empty` when there are none."""
        raise NotImplementedError

    def empty(self, frame: Frame) -> Text:
        return Text("nothing here", style=MUTED)

    def draw(self, frame: Frame, width: int, height: int) -> RenderableType:
        head, rows = self.rows(frame, width, height)
        if not rows and not self.filter_text:
            return self.empty(frame)
        self.shown = self.ordered(self.filtered(rows))
        self.count = len(self.shown)
        if not self.BORDERED:
            head = [self.heading(width), *head[1:]]
        lines, where = self.lines(self.shown)
        room = max(height - len(head), 1)
        self.page = room
        self.cursor = min(max(self.cursor, 0), max(self.count - 1, 0))
        self.scroll_to_cursor(where, len(lines), room)
        window = lines[self.top : self.top + room]
        if not self.shown:
            window = [Text(f"no row matches “{self.filter_text}” (Esc clears)", style=MUTED)]
        self.caption()
        return lines_to_text([*head, *window], height)

    def filtered(self, rows: list[Row]) -> list[Row]:
        needle = self.filter_text.casefold()
        return [r for r in rows if needle in r.whole.casefold()] if needle else rows

    def ordered(self, rows: list[Row]) -> list[Row]:
        groups = list(dict.fromkeys(r.group for r in rows))
        if self.sort_index is None or self.sort_index >= len(self.SORTS):
            return sorted(rows, key=lambda r: groups.index(r.group))
        sort, index = self.SORTS[self.sort_index], self.sort_index
        descending = sort.descending != self.reversed_order
        ordered = sorted(rows, key=lambda r: sort_key(r.keys[index]), reverse=descending)
        return sorted(ordered, key=lambda r: groups.index(r.group))

    def lines(self, rows: list[Row]) -> tuple[list[Text], list[int]]:
        """Every line (group headings between the rows), and the line of each row."""
        lines: list[Text] = []
        where: list[int] = []
        group: str | None = None
        for index, row in enumerate(rows):
            if row.group != group and row.group:
                lines.append(Text(row.group, style="bold"))
            group = row.group
            where.append(len(lines))
            focused = self.has_focus and self.CURSOR and index == self.cursor
            lines.append(highlighted(row.line) if focused else row.line)
            lines.extend(row.under)
        return lines, where

    def scroll_to_cursor(self, where: list[int], total: int, room: int) -> None:
        if self.CURSOR and where:
            line = where[self.cursor]
            # A group's heading shows with its first row.
            after = where[self.cursor - 1] if self.cursor > 0 else -1
            self.top = min(self.top, line - 1 if line > 0 and after != line - 1 else line)
            self.top = max(self.top, line - room + 1)
        self.top = max(0, min(self.top, total - room))

    def heading(self, width: int) -> Text:
        """A borderless list's first line: its title, marked when focused, its caption, and
        what its numbers are (`ABOUT`) where that fits too."""
        text = Text(f"{FOCUS_MARK if self.has_focus else ''}{self.TITLE}", style="bold")
        about = f" ({self.ABOUT})" if self.ABOUT else ""
        caption = f"  {self.caption_text()}".rstrip()
        if len(text) + len(about) + len(caption) <= width:
            text.append(about)
        return text.append(caption, style=MUTED)

    def caption(self) -> None:
        """The border's subtitle: where the cursor is, the sort and the filter. Drawn from a
        new frame, at once, with the rows; drawn in a paint (a resize), after that paint (a
        border set while the panel renders would show one paint late). Set always after the
        paint from the text of that moment, it could lag its rows, or a late call put an
        older one back."""
        if not self.BORDERED:
            return
        if self.rendering:
            self.call_after_refresh(self.set_caption)
        else:
            self.set_caption()

    def set_caption(self) -> None:
        """The caption as the panel stands when this runs (a late call never puts back an
        older one)."""
        text = self.caption_text()
        if self.border_subtitle != text:
            self.border_subtitle = text

    def caption_text(self) -> str:
        """`/filter · 3/12 · share ↓`: an active filter first, as it decides which rows show,
        so a narrow panel that cuts its caption still says it is filtered."""
        parts = [f"/{self.filter_text}"] if self.filter_text else []
        if self.CURSOR and self.count:
            parts.append(f"{self.cursor + 1}/{self.count}")
        if self.sort_index is not None and self.sort_index < len(self.SORTS):
            sort = self.SORTS[self.sort_index]
            arrow = "↓" if sort.descending != self.reversed_order else "↑"
            parts.append(f"{sort.name} {arrow}")
        return " · ".join(parts)

    def moved(self) -> None:
        self.refresh_drawing()

    def action_move(self, delta: int) -> None:
        if self.CURSOR:
            self.cursor = min(max(self.cursor + delta, 0), max(self.count - 1, 0))
        else:
            self.top = max(self.top + delta, 0)
        self.moved()

    def action_page(self, direction: int) -> None:
        self.action_move(direction * max(self.page - 1, 1))

    def on_mouse_scroll_down(self, event: events.MouseScrollDown) -> None:
        event.stop()
        self.top += WHEEL_ROWS
        if self.CURSOR:
            self.cursor = min(self.cursor + WHEEL_ROWS, max(self.count - 1, 0))
        self.moved()

    def on_mouse_scroll_up(self, event: events.MouseScrollUp) -> None:
        event.stop()
        self.top = max(self.top - WHEEL_ROWS, 0)
        if self.CURSOR:
            self.cursor = max(self.cursor - WHEEL_ROWS, 0)
        self.moved()

    def on_focus(self) -> None:
        self.moved()

    def on_blur(self) -> None:
        self.moved()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("sort", "reverse"):
            return bool(self.SORTS)
        if action in ("choose", "filter"):
            return self.CURSOR
        if action == "clear_filter":
            return bool(self.filter_text)
        return True

    def action_sort(self) -> None:
        index = self.sort_index
        following = 0 if index is None else index + 1
        self.sort_index = following if following < len(self.SORTS) else None
        self.reversed_order = False

    def action_reverse(self) -> None:
        if self.sort_index is None:
            self.sort_index = 0
        self.reversed_order = not self.reversed_order

    def action_filter(self) -> None:
        self.post_message(FilterAsked(self))

    def action_clear_filter(self) -> None:
        self.filter_text = ""

    def action_choose(self) -> None:
        if 0 <= self.cursor < len(self.shown):
            self.post_message(RowChosen(self.TITLE, self.shown[self.cursor].whole))

    def watch_sort_index(self) -> None:
        self.cursor = self.top = 0
        self.moved()

    def watch_reversed_order(self) -> None:
        self.moved()

    def watch_filter_text(self) -> None:
        self.cursor = self.top = 0
        self.moved()
        self.refresh_bindings()


def highlighted(line: Text) -> Text:
    line = line.copy()
    line.stylize("reverse")
    return line


def sort_key(value: object) -> tuple[int, object]:
    """Not measured (None) as the smallest of its column; names without regard to case."""
    if value is None:
        return (0, 0)
    if isinstance(value, str):
        return (1, value.casefold())
    return (1, value)
