"""The details of one fix: what it changes exactly, the finding behind it, the evidence, why.

`a` hands the fix back to the app, which plans it on the watched job and asks for
confirmation (`tui.apply`). While a trial runs the key is shown dimmed and does nothing; where
nothing can ever be applied (`view`, `attach`) it is not offered, and pressed it says why and
what to run instead.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Footer, Static

from torchtop.advice.patches import code_patch
from torchtop.model.findings import format_value, gain_text
from torchtop.model.trials import Proposal
from torchtop.tui.apply import PATCH_STYLE, planned_route, planned_value, proposal_text
from torchtop.tui.change import Options, describe_change
from torchtop.tui.charts import metric_text
from torchtop.tui.palette import (
    APPLY_COLOUR,
    APPLY_MEANING,
    MUTED,
    SEVERITY_COLOUR,
    SEVERITY_WORD,
)
from torchtop.tui.ranking import SEVERITY_WEIGHT, RankedFix

LINE_STYLE = {"old": "#ff8787", "new": "#87d787", "patch": "#87d787", "note": ""}
LINE_MARK = {"old": "- ", "new": "+ ", "patch": "+ ", "note": "  "}


def section(text: Text, title: str) -> None:
    text.append(f"\n{title}\n", style="bold underline")


def change_text(
    ranked: RankedFix,
    command: Sequence[str],
    options: Options,
    proposal: Proposal | None = None,
) -> Text:
    """The exact change: as planned on the running job when there is a `proposal` (what `a`
    would really do), else worked out from the command line: its summary, then old (-) and
    new (+) lines, or the patch."""
    if proposal is not None:
        return proposal_text(proposal, explain=False)
    if ranked.fix.apply == "code":
        # The same patch `a` would show: at the user's line where the fix was located.
        patch = code_patch(ranked.fix)
        text = Text("a code change only you can make; torchtop never applies it\n")
        for written in patch.rstrip().splitlines():
            text.append(written + "\n", style=PATCH_STYLE.get(written[:1], ""))
        return text
    change = describe_change(ranked.fix, command, options)
    text = Text(f"{change.summary}\n")
    for line in change.lines:
        text.append(LINE_MARK[line.kind] + line.text + "\n", style=LINE_STYLE[line.kind])
    return text


def details_text(
    ranked: RankedFix,
    command: Sequence[str],
    options: Options,
    proposal: Proposal | None = None,
) -> Text:
    """The fix, the exact change (planned on the running job when `proposal` is given), the
    finding, its evidence and the reason."""
    fix, finding = ranked.fix, ranked.finding
    text = Text()
    value = fix.value if proposal is None else planned_value(proposal)
    text.append(f"{fix.knob} = {format_value(value)}\n", style="bold")
    text.append(f"{fix.description}\n")
    # The kind once, as the plan applies it (the rule's `override` goes through the script's
    # own option where it has one).
    route = planned_route(fix, proposal)
    text.append("applies as ", style=MUTED)
    text.append(route, style=APPLY_COLOUR.get(route, ""))
    text.append(f": {APPLY_MEANING.get(route, '')}\n", style=MUTED)
    section(text, "The change")
    text.append_text(change_text(ranked, command, options, proposal))
    section(text, "Finding")
    text.append(SEVERITY_WORD.get(finding.severity, finding.severity) + " ",
                style=SEVERITY_COLOUR.get(finding.severity, ""))  # fmt: skip
    text.append(" › ".join(finding.chain) + "\n", style="bold")
    text.append(f"{finding.message}\n")
    text.append(f"{gain_text(finding)}\n")
    text.append(
        f"listed by {finding.bottleneck_class}'s {ranked.class_share:.0%} of the step "
        f"x{SEVERITY_WEIGHT.get(finding.severity, 0.3)} for {finding.severity} severity "
        "(an order, not a gain)\n",
        style=MUTED,
    )
    section(text, "Evidence")
    for name, value in finding.evidence.items():
        text.append(f"  {metric_text(name, value)}\n")
    section(text, "Why")
    text.append(" ".join(finding.why.split()) + "\n")
    return text


class FixDetailsScreen(ModalScreen[str | None]):
    """Dismissed with "apply" when the user asks to apply the fix, else None."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q,enter", "close", "Close"),
        Binding("a", "apply", "Apply + relaunch"),
        Binding("a", "why_not", "Apply + relaunch", show=False),
    ]

    def __init__(
        self,
        ranked: RankedFix,
        command: Sequence[str],
        options: Options,
        can_apply: bool,
        proposal: Proposal | None = None,
        why_not: str | None = None,
    ) -> None:
        """`why_not`: where nothing can be applied at all, what `a` says instead."""
        super().__init__()
        self.ranked = ranked
        self.command = command
        self.options = options
        self.can_apply = can_apply
        self.proposal = proposal
        self.why_not = why_not

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="details") as scroll:
            scroll.border_title = f"Fix · {self.ranked.fix.knob}"
            scroll.border_subtitle = "Esc: back"
            text = details_text(self.ranked, self.command, self.options, self.proposal)
            yield Static(text, id="details-text")
        yield Footer()

    def action_close(self) -> None:
        self.dismiss(None)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # During a trial the key is shown dimmed; where nothing can be applied at all it is
        # hidden, and the hidden `why_not` answers it.
        if action == "apply":
            return False if self.why_not is not None else (None if not self.can_apply else True)
        if action == "why_not":
            return self.why_not is not None
        return True

    def action_why_not(self) -> None:
        if self.why_not is not None:
            self.notify(self.why_not, title="Nothing to apply here", timeout=8)

    def action_apply(self) -> None:
        self.dismiss("apply")
