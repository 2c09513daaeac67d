"""After a kept fix: the relaunched job's figures as they come, and `r` to take the fix back.

An applier that can also track and revert (`relaunch.WatchedJob` can) is a `Reverter`; the
dashboard asks it for the relaunched job's figures in the tick thread and posts them as a
`HoldingUpdate`. `RevertScreen` shows what `r` would do (the command with the fix, and the one
without) and confirms it as `ApplyScreen` confirms `a`; the revert runs in a thread worker and
ends with a `RevertDone`. Kept apart from `tui.apply`'s `Applier`, so that an applier that only
applies (the tests' planners) needs nothing more.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar, Protocol, runtime_checkable

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import Footer, Static

from torchtop.advice.show import format_plan
from torchtop.model.trials import Holding, RevertOutcome, Trial, TrialEvent
from torchtop.tui.palette import MUTED


@runtime_checkable
class Reverter(Protocol):
    """Judges the job that runs with a kept fix against its trial, and can take the fix back."""

    def since_relaunch(self) -> Holding | None: ...

    @property
    def revertible(self) -> Trial | None: ...

    def revert(self, on_event: Callable[[TrialEvent], None]) -> RevertOutcome: ...


class HoldingUpdate(Message):
    def __init__(self, holding: Holding) -> None:
        super().__init__()
        self.holding = holding


class RevertDone(Message):
    def __init__(self, outcome: RevertOutcome | None, error: str | None = None) -> None:
        super().__init__()
        self.outcome = outcome
        self.error = error


def revert_text(trial: Trial, holding: Holding | None) -> Text:
    """Why one would revert (the figures), then what reverting changes, the new command red."""
    text = Text()
    if holding is not None:
        text.append(f"{holding_line(holding)}\n", style="bold")
        text.append(f"{holding.reason}\n\n", style=MUTED)
    for line in format_plan(trial.plan_after, trial.plan_before).splitlines():
        if line.startswith("change:"):
            line = f"take back: {trial.plan_after.description}"
        text.append(line + "\n")
    text.append(
        "\nReverting stops the job and starts it again as it ran before the trial. The trial "
        "stays in the run folder; the revert is recorded beside it (reverts.jsonl).\n",
        style=MUTED,
    )
    return text


def holding_line(holding: Holding) -> str:
    """`trial said 2.10x (11.9 steps/s), since relaunch 2.05x (11.6 steps/s over 412 steps)`."""
    said = f"trial said {_x(holding.claimed_speedup)} ({_rate(holding.claimed_steps_per_s)})"
    if holding.steps_per_s is None:
        return f"{said}, since relaunch: no steady-state step yet"
    since = f"{_x(holding.speedup)} ({_rate(holding.steps_per_s)} over {holding.steps} steps)"
    return f"{said}, since relaunch {since}"


def _x(speedup: float | None) -> str:
    return f"{speedup:.2f}x" if speedup is not None else "?x"


def _rate(rate: float | None) -> str:
    return f"{rate:.1f} steps/s" if rate is not None else "not measured"


class RevertScreen(ModalScreen[bool]):
    """Dismissed with True when the user confirms taking the kept fix back."""

    DEFAULT_CSS = """
    RevertScreen { align: center middle; }
    #revert {
        width: 90%; max-width: 110; height: auto; max-height: 90%;
        border: round $warning; border-title-style: bold; padding: 0 1; background: $surface;
    }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y,enter", "confirm", "Revert + relaunch"),
        Binding("escape,n,q", "cancel", "Cancel"),
    ]

    def __init__(self, trial: Trial, holding: Holding | None) -> None:
        super().__init__()
        self.trial = trial
        self.holding = holding

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="revert") as scroll:
            changes = "; ".join(self.trial.plan_after.changes) or self.trial.plan_after.description
            scroll.border_title = f"Revert · {changes}"
            scroll.border_subtitle = "y: revert · Esc: cancel"
            yield Static(revert_text(self.trial, self.holding), id="revert-text")
        yield Footer()

    def action_confirm(self) -> None:
        self.dismiss(True)

    def action_cancel(self) -> None:
        self.dismiss(False)
