"""`torchtop diff A B` in a terminal: the two runs side by side.

Each side's step figures, verdict and breakdown (a bar per category, in the dashboard's letters
and colours) in two columns, then the changes that matter below: first the settings that differ
(`num_workers 0 -> 2`), the steps/s ratio and whether it is beyond noise, where the time moved,
then the top operator and kernel changes, memory and communication, in the same words as the
text report (`report.diff_text`). Data in, nothing else: the session hands the finished `changes`.
"""

from __future__ import annotations

from typing import ClassVar

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, VerticalScroll
from textual.widgets import Footer, Static

from torchtop.model.diff import DiffSection, Document
from torchtop.report.diff_text import diff_sections
from torchtop.tui.palette import CATEGORY, MUTED, VERDICT_COLOUR, VERDICT_DEFAULT_COLOUR

BAR_CELLS = 12
TOP_ROWS = 5
TITLE_WIDTH = 30
SCREEN_ORDER = (
    "settings", "steps", "where", "operators", "kernels", "verdict", "memory", "communication",
)  # fmt: skip

CSS = """
Screen { layout: vertical; }
#sides { height: auto; }
.side { width: 1fr; height: auto; border: round #5f87ff; padding: 0 1; }
#changes { height: 1fr; border: round #7a7a7a; padding: 0 1; }
"""


class DiffApp(App[None]):
    """A read-only screen: the changes scroll (up, down, page keys), `q` quits."""

    CSS = CSS
    TITLE = "torchtop diff"
    BINDINGS: ClassVar[list[BindingType]] = [Binding("q", "quit", "Quit")]

    def __init__(self, changes: Document) -> None:
        super().__init__()
        self.changes = changes

    def compose(self) -> ComposeResult:
        with Horizontal(id="sides"):
            for which in ("a", "b"):
                side = Static(side_view(self.changes, which), classes="side")
                path = self.changes["inputs"][which]["path"]
                side.border_title = f"{which.upper()}  {tail(path)}"
                yield side
        changes = VerticalScroll(Static(changes_view(self.changes)), id="changes")
        changes.border_title = "B against A"
        yield changes
        yield Footer()


def tail(path: str, width: int = TITLE_WIDTH) -> str:
    """The end of a long path, which tells two runs apart (their folders share a start)."""
    return path if len(path) <= width else "…" + path[-(width - 1) :]


def side_view(changes: Document, which: str) -> RenderableType:
    """One side: its steps, its verdict, its breakdown as bars."""
    steps = changes["steps"][which]
    verdict = changes["verdict"]
    bottleneck = verdict[which] or "unknown"
    head = Text()
    head.append(bottleneck, style=VERDICT_COLOUR.get(bottleneck, VERDICT_DEFAULT_COLOUR))
    confidence = verdict[f"{which}_confidence"]
    if confidence is not None:
        head.append(f" ({confidence:.2f})", style=MUTED)
    mean_ms, rate = steps["mean_ms"], steps["steps_per_s"]
    figures = Text(f"{'-' if mean_ms is None else f'{mean_ms:.1f}'} ms/step  ")
    figures.append(f"{'-' if rate is None else f'{rate:g}'}/s  ")
    figures.append(f"{steps['count'] if steps['count'] is not None else '-'} steps", style=MUTED)
    bars = Table.grid(padding=(0, 1))
    for key, shares in changes["breakdown"].items():
        share = shares[which]
        category = CATEGORY.get(key)
        colour = category.colour if category else MUTED
        letter = category.letter if category else "?"
        cells = 0 if share is None else round(share * BAR_CELLS)
        bars.add_row(
            Text(f"{letter} {category.label if category else key}", style=colour),
            Text("     -" if share is None else f"{share:6.1%}"),
            Text(letter * cells, style=colour) + Text("·" * (BAR_CELLS - cells), style=MUTED),
        )
    return Group(head, figures, bars)


def changes_view(changes: Document) -> RenderableType:
    """The sections below the sides: the settings that differ, the steps and where the time
    moved, then the top changes, then the rest; the breakdown is above, side by side."""
    sections = {s.title.split()[0]: s for s in diff_sections(changes, top=TOP_ROWS)}
    return Group(*(section_table(sections[name]) for name in SCREEN_ORDER))


def section_table(section: DiffSection) -> RenderableType:
    title = Text(section.title, style="bold")
    if not section.rows:
        return Group(title, _note(section.note or ""))
    names = section.title.endswith("changed most")
    table = Table(box=None, padding=(0, 1), show_edge=False, header_style=MUTED, expand=names)
    # The name gives way on a narrow screen; the figures keep their width.
    table.add_column(section.header[0], no_wrap=True, overflow="ellipsis", ratio=1)
    for index, head in enumerate(section.header[1:], start=1):
        words = index < section.left
        table.add_column(
            head, justify="left" if words else "right", no_wrap=True, min_width=len(head)
        )
    for row in section.rows:
        table.add_row(*row)
    lines: list[RenderableType] = [title, table]
    if section.note:
        lines.append(_note(section.note))
    return Group(*lines)


def _note(note: str) -> Text:
    """A section's closing words, each of its lines indented."""
    return Text("\n".join(f"  {line}" for line in note.splitlines()), style=MUTED)


def run_diff(changes: Document) -> None:
    DiffApp(changes).run()
