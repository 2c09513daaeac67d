"""The suggested fixes, ranked by expected gain, each marked with how it applies.

Arrows move, Enter posts `FixChosen` up to the app, which opens the details. The options are
rebuilt only when the list of fixes changes, so a live update does not move the highlight. On
a tall terminal the exact change of the highlighted fix is previewed under the list.
"""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.message import Message
from textual.reactive import reactive
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from torchtop.model.findings import Fix, format_value, gain_short
from torchtop.model.trials import Proposal
from torchtop.tui.apply import planned_route, planned_value
from torchtop.tui.details import change_text
from torchtop.tui.frame import Frame
from torchtop.tui.palette import APPLY_COLOUR, MUTED, SEVERITY_COLOUR, SEVERITY_WORD
from torchtop.tui.ranking import RankedFix, why_no_fix
from torchtop.tui.widgets.panel import FOCUS_MARK


class FixChosen(Message):
    def __init__(self, ranked: RankedFix) -> None:
        super().__init__()
        self.ranked = ranked


def fix_prompt(
    number: int, ranked: RankedFix, proposal: Proposal | None = None, width: int | None = None
) -> Text:
    """`1 HIGH override dataloader.num_workers = 4 pred 1.50x`; narrower than `width`, the knob
    and its value start a line of their own (the rest wraps between words), never cut. The
    figure is the finding's one gain (`gain_short`), as every other surface gives it.

    With the fix planned on the running job (`proposal`), the value is the one applying it
    would set, and a fix that cannot be applied now is dimmed and says so."""
    fix, severity = ranked.fix, ranked.finding.severity
    value, refused = shown_value(fix, proposal)
    text = Text(f"{number} ", style=MUTED)
    text.append(SEVERITY_WORD.get(severity, severity), style=SEVERITY_COLOUR.get(severity))
    route = planned_route(fix, proposal)  # as applying it would, not as the rule first said
    text.append(f" {route}", style=APPLY_COLOUR.get(route, ""))
    change = Text(f"{fix.knob} = {format_value(value)}", style=MUTED if refused else "bold")
    gain = Text(gain_short(ranked.finding), style=MUTED)
    if refused:
        gain.append(" · not applicable now", style=MUTED)
    # Each piece on the line it fits: `knob = value` is never split, nor the figure after it.
    room = width if width is not None else 10**6
    if len(text) + len(change) + len(gain) + 2 <= room:
        text.append_text(Text(" ").join([Text(""), change, gain]))
    elif len(change) + len(gain) + 1 <= room:
        text.append_text(Text("\n").append_text(Text(" ").join([change, gain])))
    else:
        text.append_text(Text("\n").join([Text(""), change, gain]))
    text.overflow = "fold"
    return text


def shown_value(fix: Fix, proposal: Proposal | None) -> tuple[object, bool]:
    """The value the list shows for `fix`: the one applying it would set (the rule's value
    resolved for the job and machine), else the rule's own; and whether the fix cannot be
    applied now (a code fix is never applied, and is not dimmed for it)."""
    if proposal is None:
        return fix.value, False
    if proposal.after is None:
        return fix.value, fix.apply != "code"
    return planned_value(proposal), False


class FixOptions(OptionList):
    """The list itself; Enter is shown in the footer as what it does here."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("enter", "select", "Details")]


class FixList(Vertical):
    frame: reactive[Frame | None] = reactive(None, always_update=True)

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.fixes: tuple[RankedFix, ...] = ()
        self._keys: tuple[tuple[object, ...], ...] | None = None

    def compose(self) -> ComposeResult:
        yield FixOptions(id="fix-options")
        yield Static(id="fix-preview")

    def on_mount(self) -> None:
        self.border_title = "Fixes"
        self.border_subtitle = "Enter: details"

    def on_descendant_focus(self) -> None:
        self.border_title = f"{FOCUS_MARK}Fixes"

    def on_descendant_blur(self) -> None:
        self.border_title = "Fixes"

    def on_resize(self) -> None:
        """The prompts break where the new width needs them to."""
        if self.frame is not None:
            self._keys = None
            self.watch_frame(self.frame)

    def watch_frame(self, frame: Frame | None) -> None:
        if frame is None:
            return
        options = self.query_one(OptionList)
        # Room for a scrollbar, which shows once the prompts outgrow the list.
        width = options.size.width - options.styles.scrollbar_size_vertical or None
        keys: tuple[tuple[object, ...], ...] = tuple(
            (*r.key, repr(value), refused, width)
            for r in frame.fixes
            for value, refused in [shown_value(r.fix, frame.proposals.get(r.key))]
        )
        if not frame.fixes:  # the empty list's words change with the verdict
            keys = ((empty_reason(frame), width),)
        if keys == self._keys:
            return
        self._keys, self.fixes = keys, frame.fixes
        highlighted = options.highlighted
        options.clear_options()
        if not frame.fixes:
            options.add_option(Option(Text(empty_reason(frame), style=MUTED), disabled=True))
            self.preview(None)
            return
        options.add_options(
            [
                fix_prompt(i, r, frame.proposals.get(r.key), width)
                for i, r in enumerate(frame.fixes, 1)
            ]
        )
        options.highlighted = min(highlighted or 0, len(frame.fixes) - 1)
        self.preview(options.highlighted)

    def on_option_list_option_highlighted(self, event: OptionList.OptionHighlighted) -> None:
        self.preview(event.option_index)

    def preview(self, index: int | None) -> None:
        frame = self.frame
        preview = self.query_one("#fix-preview", Static)
        if frame is None or index is None or not 0 <= index < len(self.fixes):
            preview.update("")
            return
        ranked = self.fixes[index]
        text = Text(ranked.fix.description + "\n", style=MUTED)
        proposal = frame.proposals.get(ranked.key)
        text.append_text(change_text(ranked, frame.command, frame.cli_options, proposal))
        text.rstrip()
        preview.update(text)

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        if 0 <= event.option_index < len(self.fixes):
            self.post_message(FixChosen(self.fixes[event.option_index]))


def empty_reason(frame: Frame) -> str:
    return why_no_fix(frame.verdict)
