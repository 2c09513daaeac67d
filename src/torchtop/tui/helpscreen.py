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
    # Each meaning fits beside its key in the help box at 80 columns.
    ("?", "this help"),
    ("q", "quit (`run` and `demo` stop the job)"),
    ("p", "live: pause or resume the display"),
    ("tab / shift+tab", "next / previous panel (its title gets ▸)"),
    ("up / down", "move in a list, or scroll a panel"),
    ("pgup / pgdn", "a page up / down in a list"),
    ("home / end", "the first / the last row of a list"),
    ("mouse wheel", "scroll the list under the pointer"),
    ("s / S", "sort by the next column / reverse the order"),
    ("/", "filter the list (Enter keeps, Esc clears)"),
    ("esc", "clear the focused list's filter"),
    ("enter", "Fixes: the details; other lists: the whole row"),
    ("a", "`run`/`demo`: apply the fix, confirm, A/B trial"),
    ("r", "after a kept fix: take it back"),
    ("m", "live: time each module's forward for a few steps"),
    ("o", "the job's own output, followed (`run`, `demo`)"),
    ("f", "a panel folded for room: show it (another folds)"),
    ("e (output)", "the job's stderr lines alone, or all again"),
    ("k (output)", "torchrun's lines of one rank, then the next"),
    ("left / right", "Step time, offline: pick a step"),
    ("a (Step time)", "offline: back to all steps"),
)


def help_text() -> Text:
    text = Text()
    text.append("Keys\n", style="bold underline")
    for key, meaning in KEYS:
        text.append(f"  {key:<16}", style="bold")
        text.append(f"{meaning}\n")
    text.append("  The footer: the focused panel's keys first, then the others.\n")
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
    text.append("\npred N.NNx after a fix: its finding's predicted speed-up if the time it names ")
    text.append("were recovered and nothing else changed; a prediction, not a bound.\n")
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
