"""How long a trial has run, how long its current phase has, and about how long the measured
run in progress has left: the trial panel redraws these every second while the trial runs.

A trial is tens of seconds to minutes of measured runs during which nothing else on the
dashboard moves (the job is stopped), so the panel must show that it is alive. The times are
those at which the trial worker's events arrived (`TrialClock.after`); a measured run's time
left is the mean of the runs measured so far less the time this one has taken, so it is said
only from the second run on (before, the phase's time so far), and "finishing" once overdue.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from torchtop.model.trials import Measured, Stage, TrialEvent
from torchtop.tui.charts import duration

MEASURING_STAGES = ("measuring", "trial ")
"""Stages said while measured runs go on: the first run's start, and a round's verdict."""


@dataclass(frozen=True)
class TrialClock:
    started_s: float
    phase_s: float
    """When the current stage (or measured run) began."""
    runs_s: tuple[float, ...] = ()
    """Each measured run's duration so far."""
    measuring: bool = False

    @classmethod
    def start(cls, at_s: float) -> TrialClock:
        return cls(at_s, at_s)

    def after(self, event: TrialEvent, at_s: float) -> TrialClock:
        if isinstance(event, Measured):
            runs = (*self.runs_s, at_s - self.phase_s)
            return replace(self, phase_s=at_s, runs_s=runs, measuring=True)
        if isinstance(event, Stage):
            measuring = event.text.startswith(MEASURING_STAGES)
            if measuring and self.measuring:  # a round's verdict: the runs go on
                return self
            return replace(self, phase_s=at_s, measuring=measuring)
        return self

    def phase_words(self, now_s: float) -> str:
        """`run 3 0:12, about 0:05 left`, or the current stage's time so far."""
        so_far = now_s - self.phase_s
        if not self.measuring:
            return duration(so_far)
        words = f"run {len(self.runs_s) + 1} {duration(so_far)}"
        if not self.runs_s:
            return words
        left_s = sum(self.runs_s) / len(self.runs_s) - so_far
        return f"{words}, about {duration(left_s)} left" if left_s >= 1 else f"{words}, finishing"

    def running_words(self, now_s: float) -> str:
        return f"running {duration(now_s - self.started_s)}"
