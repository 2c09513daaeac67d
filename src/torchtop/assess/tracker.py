"""Hysteresis for the live verdict, so it does not flap between two close classes.

A new verdict is shown only once it has been the assessment for `hold` consecutive updates;
until then the shown verdict stays. The first real verdict after `unknown` needs the same hold,
so a momentary spike never becomes the headline.
"""

from __future__ import annotations

from dataclasses import dataclass

from msgspec.structs import replace

from torchtop.model.findings import Verdict

DEFAULT_HOLD = 3


@dataclass
class VerdictTracker:
    hold: int = DEFAULT_HOLD
    shown: Verdict | None = None
    candidate: str | None = None
    streak: int = 0

    def update(self, assessed: Verdict) -> Verdict:
        """Feed the latest assessment; returns the verdict to show."""
        if self.shown is None:
            self.shown = replace(assessed, bottleneck="unknown", confidence=0.0, findings=())
        if assessed.bottleneck == self.shown.bottleneck:
            self.candidate, self.streak = None, 0
            self.shown = assessed
            return assessed
        if assessed.bottleneck == self.candidate:
            self.streak += 1
        else:
            self.candidate, self.streak = assessed.bottleneck, 1
        if self.streak >= self.hold:
            self.candidate, self.streak = None, 0
            self.shown = assessed
        return self.shown
