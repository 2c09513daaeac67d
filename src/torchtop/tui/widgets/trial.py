"""The trial of an accepted fix: its progress, steps/s before and after side by side, the outcome.

Hidden until the user applies a fix. While the trial runs it shows the change, what is being
done (each undecided round: its interval and the rounds left), and each measured run's steps/s
in two columns (the job as it ran, and with the fix); at the end the pooled rates, the speedup
with the finding's predicted bound beside it, and whether the fix was kept (the job now runs
with it) or reverted (the job runs as before), with the rounds' interval. After a kept fix a
fourth line follows the relaunched job: what the trial said against what the job has done since
(a `Holding`), after the check's word as every surface says it (`holds`, `no longer holds`:
`model.rounds.holding_words`), in the warning colour with `r: revert` when it no longer holds,
until the user reverts. `TrialView` is the state; the panel draws it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from rich.text import Text
from textual.reactive import reactive
from textual.widgets import Static

from torchtop.model.rounds import (
    FAILED,
    NO_LONGER_HOLDS,
    REVERTED_BY_YOU,
    estimate_claim,
    holding_words,
    outcome_text,
    outcome_words,
    predicted_text,
)
from torchtop.model.trials import (
    Decided,
    Holding,
    RevertOutcome,
    Stage,
    TrialEvent,
    TrialOutcome,
)
from torchtop.tui.palette import MUTED
from torchtop.tui.revert import holding_line
from torchtop.tui.widgets.folded import Reshaped
from torchtop.tui.widgets.trialclock import TrialClock

KEPT_STYLE = "bold #5fc75f"
REVERTED_STYLE = "bold #e0b000"
SHORT_STYLE = "bold #ff5f5f"


@dataclass(frozen=True)
class TrialView:
    change: str
    stage: str = "starting"
    before: tuple[float, ...] = ()
    after: tuple[float, ...] = ()
    outcome: TrialOutcome | None = None
    events: tuple[str, ...] = field(default_factory=tuple)
    holding: Holding | None = None
    """The relaunched job with the kept fix, against the trial; None before (or without) one."""
    revert: RevertOutcome | None = None
    revert_error: str | None = None
    clock: TrialClock | None = None
    """When the trial and its phases began (None: not timed, as a test's view)."""

    def updated(self, event: TrialEvent, at_s: float | None = None) -> TrialView:
        """`event` said at `at_s` (the app's monotonic clock; None: untimed)."""
        clock = self.clock
        if clock is not None and at_s is not None:
            clock = clock.after(event, at_s)
        view = replace(self, events=(*self.events, event.text), clock=clock)
        if isinstance(event, Stage):
            return replace(view, stage=event.text)
        if isinstance(event, Decided):
            return view  # the outcome line says it when the job runs
        stage = f"measured {event.label}: {event.steps_per_s:.2f} steps/s"
        if event.label.startswith("before"):
            return replace(view, stage=stage, before=(*self.before, event.steps_per_s))
        return replace(view, stage=stage, after=(*self.after, event.steps_per_s))

    def finished(self, outcome: TrialOutcome) -> TrialView:
        return replace(self, outcome=outcome, stage=outcome_line(outcome))

    def tracked(self, holding: Holding) -> TrialView:
        """The relaunched job's newest figures; frozen once the fix was taken back."""
        if not self.kept_and_running:
            return self
        return replace(self, holding=holding)

    def reverted(self, outcome: RevertOutcome | None, error: str | None = None) -> TrialView:
        stage = outcome_line(self.outcome) if self.outcome is not None else self.stage
        return replace(self, revert=outcome, revert_error=error or None, stage=stage)

    @property
    def kept_and_running(self) -> bool:
        """The job runs with the fix this trial kept (not taken back, nor tried to be)."""
        kept = self.outcome is not None and self.outcome.kept
        return kept and self.revert is None and self.revert_error is None

    @property
    def falls_short(self) -> bool:
        return self.holding is not None and self.holding.holds is False

    @property
    def gain_gone(self) -> bool:
        """The relaunched job is back at its rate before the fix: the fix no longer pays."""
        return self.holding is not None and self.holding.gain_gone is True


def outcome_line(outcome: TrialOutcome) -> str:
    """`faster: kept: measured 3.98x (99% interval 3.51-4.52x, 4 rounds); ...` or
    `inconclusive: reverted (6 of 6 rounds favoured the fix; about 4 more rounds ... would
    decide it at this spread): measured 3.18x (...); ...`: the outcome named as `tune` names
    it (`model.rounds.outcome_text`), with its interval."""
    trial = outcome.trial
    if outcome.cancelled:
        return "cancelled: torchtop is quitting"
    if trial is None:
        runs = "; the job runs as it did" if outcome.plan is not None else ""
        return f"no trial: {outcome.error or 'it could not run'}{runs}"
    measured = estimate_claim(trial.speedup, trial.estimate)
    estimate = trial.estimate
    said = outcome_text(
        trial.outcome,
        trial.kept,
        estimate.favouring if estimate is not None else None,
        estimate.rounds if estimate is not None else 0,
        trial.decides_with,
    )
    load = f"; {trial.load_change}" if trial.load_change else ""
    if trial.kept:
        return f"{said}: {measured}{load}; the job now runs with the fix"
    if trial.outcome == FAILED:
        said = f"{said}: {trial.reason}"
    return f"{said}: {measured}{load}; the job runs with its original settings again"


def outcome_word(outcome: TrialOutcome) -> str:
    """The panel's title: `faster: kept`, `inconclusive: reverted`, as `tune` names them."""
    if outcome.cancelled:
        return "cancelled"
    if outcome.trial is None:
        return "not run"
    return outcome_words(outcome.trial.outcome, outcome.trial.kept)


def rates_text(rates: tuple[float, ...]) -> str:
    return " · ".join(f"{r:.2f}" for r in rates) if rates else "…"


def trial_text(view: TrialView, now_s: float | None = None) -> Text:
    """Three lines: the change; before | after (| speedup); the stage or the outcome (while
    running, with its time so far at `now_s`)."""
    text = Text(f"{view.change}\n", style="bold")
    trial = view.outcome.trial if view.outcome else None
    if trial is not None:
        after = trial.trial_steps_per_s
        text.append(f"before {trial.baseline_steps_per_s:.2f} steps/s")
        text.append("  │  ", style=MUTED)
        text.append(f"after {after:.2f} steps/s" if after is not None else "after not measured")
        if trial.speedup is not None:
            text.append("  │  ", style=MUTED)
            text.append(f"{trial.speedup:.2f}x", style="bold")
        if trial.predicted_gain is not None:
            # The finding's prediction beside the measurement (its interval is on the outcome line).
            text.append(f" · {predicted_text(trial.predicted_gain)}", style=MUTED)
        text.append(f"   (runs: {rates_text(view.before)} │ {rates_text(view.after)})\n", MUTED)
    else:
        text.append(f"before {rates_text(view.before)} steps/s")
        text.append("  │  ", style=MUTED)
        text.append(f"after {rates_text(view.after)} steps/s\n")
    style = MUTED
    if view.outcome is not None:
        style = KEPT_STYLE if view.outcome.kept else REVERTED_STYLE
    if view.outcome is None and view.clock is not None and now_s is not None:
        # First: a long stage is cut at the panel's edge, its time must not be.
        text.append(f"{view.clock.phase_words(now_s)} · ", style="bold")
    text.append(view.stage, style=style)
    if view.holding is not None or view.revert is not None or view.revert_error is not None:
        text.append("\n")
        text.append_text(since_text(view))
    return text


def brief_text(view: TrialView) -> Text:
    """The outcome alone (and the job since the relaunch): the last lines of `trial_text`."""
    lines = trial_text(view).split("\n")
    return Text("\n").join(lines[2:])


def since_text(view: TrialView) -> Text:
    """The fourth line: the relaunched job against the trial, its warning, or the revert."""
    figures = holding_line(view.holding) if view.holding is not None else ""
    if view.revert_error is not None:
        return Text(f"revert failed: {view.revert_error}", style=SHORT_STYLE)
    if view.revert is not None:
        if view.revert.cancelled:
            return Text("revert cancelled: torchtop is quitting", style=MUTED)
        return Text(f"{REVERTED_BY_YOU}: the job runs without the fix again ({figures})", MUTED)
    holding = view.holding
    if holding is None:
        return Text("")
    said = holding_words(holding.holds, holding.gain_gone)
    if view.falls_short:
        # The warning first: a narrow terminal cuts the end of the line.
        return Text(f"⚠ {said} · r: revert · {figures}", SHORT_STYLE)
    return Text(f"{said} · {figures}", style="" if holding.holds else MUTED)


class TrialPanel(Static):
    """Shown from the first applied fix on; the newest trial only. `brief` (a short terminal,
    the trial over): only its outcome, so the bottom row can have its rows back. While a timed
    trial runs, it redraws every second (its time so far, its phase's, the time left)."""

    view: reactive[TrialView | None] = reactive(None, always_update=True)
    brief: reactive[bool] = reactive(False)

    def __init__(self, id: str | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__(id=id)
        self.clock = clock

    def watch_brief(self) -> None:
        if self.view is not None:
            self.draw(self.view)

    def on_mount(self) -> None:
        self.display = False
        self.set_interval(1.0, self.tick)

    def tick(self) -> None:
        view = self.view
        if view is not None and view.outcome is None and view.clock is not None:
            self.draw(view)

    def draw(self, view: TrialView) -> None:
        now_s = self.clock()
        if view.outcome is None:
            running = view.clock.running_words(now_s) if view.clock is not None else "running"
            self.border_title = f"Trial · {running}"
        self.update(brief_text(view) if self.brief else trial_text(view, now_s))
        self.post_message(Reshaped())  # a longer line may need another row

    def watch_view(self, view: TrialView | None) -> None:
        if view is None:
            self.display = False  # shown by the app's arrangement (`tui.arrange`), or folded
            return
        outcome = view.outcome
        if outcome is None:
            self.border_subtitle = "q: quit (ends the trial)"
        elif view.revert is not None and not view.revert.cancelled:
            self.border_title = f"Trial · {outcome_word(outcome)} · {REVERTED_BY_YOU}"
            self.border_subtitle = ""
        elif view.falls_short and view.kept_and_running:
            self.border_title = f"Trial · {outcome_word(outcome)} · {NO_LONGER_HOLDS}"
            self.border_subtitle = "r: revert"
        else:
            self.border_title, self.border_subtitle = f"Trial · {outcome_word(outcome)}", ""
        self.draw(view)
