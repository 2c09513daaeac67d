"""Applying a fix from the dashboard: who does it, the confirm modal, the trial's messages.

`a` on a fix (in the list, or in its details) asks the `Applier` (`relaunch.WatchedJob`'s
shape) for a `Proposal` off the UI thread; `ApplyScreen` then shows exactly what would change,
the old and the new command, environment and overrides (`advice.show.format_plan`), or why
the fix cannot be applied (a code change is shown as its patch: torchtop never applies one).
Confirming starts the trial in a thread worker, which posts a `TrialUpdate` per step and a
`TrialDone` at the end ("messages up"); the trial panel shows them.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Sequence
from typing import ClassVar, Protocol

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import Footer, Static

from torchtop.advice.show import format_plan
from torchtop.model.findings import Fix, format_value
from torchtop.model.report import Report
from torchtop.model.trials import Proposal, TrialEvent, TrialOutcome
from torchtop.tui.palette import MUTED

OLD_STYLE = "#ff8787"
NEW_STYLE = "#87d787"
PATCH_STYLE = {"-": OLD_STYLE, "+": NEW_STYLE, "#": MUTED}


class Applier(Protocol):
    """Plans a fix on the watched job, tries it in an A/B trial, and can cancel that trial."""

    def propose(self, fix: Fix, report: Report) -> Proposal: ...

    def try_fix(
        self, proposal: Proposal, on_event: Callable[[TrialEvent], None]
    ) -> TrialOutcome: ...

    def cancel(self, timeout_s: float = ...) -> bool: ...


class ProposalReady(Message):
    def __init__(self, proposal: Proposal) -> None:
        super().__init__()
        self.proposal = proposal


class TrialUpdate(Message):
    def __init__(self, event: TrialEvent) -> None:
        super().__init__()
        self.event = event


class TrialDone(Message):
    def __init__(self, outcome: TrialOutcome) -> None:
        super().__init__()
        self.outcome = outcome


def why_not_applied(live: bool, command: Sequence[str]) -> str:
    """What `a` says where no fix can be applied (`view`, `attach`), naming the command that
    can: `run` starts the job itself, so it can stop it and measure a fix."""
    rerun = shlex.join(command) if command else "python train.py"
    if live:
        return (
            "torchtop did not start this job, so it cannot relaunch it with a fix; "
            f"`torchtop run -- {rerun}` to try fixes"
        )
    return (
        "view shows a recorded run: no job is running to try a fix on; "
        f"`torchtop run -- {rerun}` to try fixes"
    )


def planned_value(proposal: Proposal) -> object:
    """The value applying the proposal sets (the plan's), else the fix's own: the one value
    the title, the body, the list and the details all show."""
    if proposal.after is not None:
        for applied in reversed(proposal.after.fixes):
            if applied.knob == proposal.fix.knob:
                return applied.value
    return proposal.fix.value


def planned_route(fix: Fix, proposal: Proposal | None) -> str:
    """How the fix will be applied: the plan's route (`arg` where the script has the option,
    though the rule says `override`), else the rule's own: the one kind every surface names."""
    if proposal is not None and proposal.after is not None:
        for applied in reversed(proposal.after.fixes):
            if applied.knob == fix.knob:
                return applied.route
    return fix.apply


def proposal_text(proposal: Proposal, explain: bool = True) -> Text:
    """The change, line by line: old lines red, new lines green; or why it cannot be applied.
    `explain`: end with what applying does (the modal; the fix list's preview leaves it out)."""
    text = Text()
    if proposal.after is None:
        refusal = proposal.refusal
        reason = refusal.reason if refusal is not None else "no plan"
        text.append("This fix cannot be applied by torchtop: ", style="bold")
        text.append(f"{reason}.\n")
        if refusal is not None and refusal.patch:
            text.append("\nThe change to make in your script:\n", style="bold underline")
            for line in refusal.patch.rstrip().splitlines():
                text.append(line + "\n", style=PATCH_STYLE.get(line[:1], ""))
        return text
    for line in format_plan(proposal.before, proposal.after).splitlines():
        text.append(line + "\n", style=_plan_style(line))
    if not explain:
        return text
    text.append(
        "\nApplying stops the job, measures it as it ran and with this change, alike (the same "
        "steady-state steps after the same warm-up), in rounds of alternating order until the "
        "rounds' interval decides (2 to 6 rounds), keeps the change only if it is faster beyond "
        "noise, and starts the job again either way.\n",
        style=MUTED,
    )
    return text


def _plan_style(line: str) -> str:
    if line.startswith("old command"):
        return OLD_STYLE
    if line.startswith(("new command", "  ")) and "->" not in line:
        return NEW_STYLE
    if line.startswith("change:"):
        return "bold"
    return ""


class ApplyScreen(ModalScreen[bool]):
    """Dismissed with True when the user confirms; the confirm key exists only for a plan."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y,enter", "confirm", "Apply + relaunch"),
        Binding("escape,n,q", "cancel", "Cancel"),
    ]

    def __init__(self, proposal: Proposal) -> None:
        super().__init__()
        self.proposal = proposal

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="apply") as scroll:
            value = format_value(planned_value(self.proposal))
            scroll.border_title = f"Apply · {self.proposal.fix.knob} = {value}"
            scroll.border_subtitle = (
                "y: apply · Esc: cancel" if self.proposal.after is not None else "Esc: back"
            )
            yield Static(proposal_text(self.proposal), id="apply-text")
        yield Footer()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # A fix torchtop cannot apply has nothing to confirm: the key is not offered at all.
        return self.proposal.after is not None if action == "confirm" else True

    def action_confirm(self) -> None:
        self.dismiss(True)

    def action_cancel(self) -> None:
        self.dismiss(False)
