"""`?`: the keys, and what each colour, letter and mark means."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from torchtop.tui.palette import (
    APPLY_COLOUR,
    APPLY_MEANING,
    CATEGORIES,
    SEVERITY_COLOUR,
    SEVERITY_WORD,
)

KEYS = (
    ("?", "this help"),
    ("q", "quit (stops watching; `run` and `demo` stop the job)"),
    ("p", "live: pause or resume the display (recording goes on)"),
    ("tab / shift+tab", "next / previous panel (the focused one's title starts with ▸)"),
    ("up / down", "move in a list, or scroll a panel"),
    ("pgup / pgdn", "a page up or down in a list"),
    ("home / end", "the first or the last row of a list"),
    ("mouse wheel", "scroll the list under the pointer"),
    ("s / S", "sort a list by its next column / turn the order round"),
    ("/", "filter a list (Enter keeps the filter, Esc clears it)"),
    ("esc", "clear the focused list's filter"),
    ("enter", "Fixes: the fix's details; other lists: the whole row (full kernel name)"),
    ("a", "`run`/`demo`: apply the highlighted fix: see the change, confirm, watch the A/B trial"),
    ("r", "after a kept fix: take it back (the job starts again as it ran before the trial)"),
    ("left / right", "offline, Step time focused: pick a step (home/end, pgup/pgdn jump)"),
    ("a (Step time)", "offline, Step time focused: back to all steps"),
)


def help_text() -> Text:
    text = Text()
    text.append("Keys\n", style="bold underline")
    for key, meaning in KEYS:
        text.append(f"  {key:<16}", style="bold")
        text.append(f"{meaning}\n")
    text.append("  The footer shows the keys of the focused panel first, then the others.\n")
    text.append("\nStep time categories\n", style="bold underline")
    for category in CATEGORIES:
        text.append(f"  {category.letter} ", style=f"bold #101010 on {category.colour}")
        text.append(f" {category.label}\n")
    text.append("\nSeverity\n", style="bold underline")
    for severity, word in SEVERITY_WORD.items():
        text.append(f"  {word:<5}", style=SEVERITY_COLOUR[severity])
        text.append(f" {severity}\n")
    text.append("\nHow a fix applies\n", style="bold underline")
    for route, meaning in APPLY_MEANING.items():
        text.append(f"  {route:<9}", style=APPLY_COLOUR[route])
        text.append(f" {meaning}\n")
    text.append("\n~N% after a fix: the share of step time its class explains, weighted by ")
    text.append("severity; it ranks the fixes and promises no speed-up.\n")
    return text


class HelpScreen(ModalScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,q,question_mark", "close", "Close")]

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help") as scroll:
            scroll.border_title = "torchtop · help"
            scroll.border_subtitle = "Esc: back"
            yield Static(help_text())

    def action_close(self) -> None:
        self.dismiss(None)
