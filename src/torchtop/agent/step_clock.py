"""Turns step-end signals into step records: wall time and DataLoader wait per step.

Two sources mark step ends: optimizer step hooks (automatic) and `torchtop.step()` (explicit).
The first explicit call silences the hooks for good, so a loop with both counts each step once.
When several optimizers step (a GAN, an optimizer wrapping another), the first one to step is
the clock; another takes over only if it steps twice while the clock does not (the clock was
replaced). Pure: the caller passes the time, so tests need no sleeping.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass
class StepClock:
    count: int = 0
    last_end_s: float | None = None
    data_wait_s: float = 0.0
    data_seen: bool = False
    explicit: bool = False
    _clock_id: int | None = None
    _rival_id: int | None = None
    _rival_steps: int = 0

    def add_data_wait(self, seconds: float) -> None:
        self.data_wait_s += seconds
        self.data_seen = True

    def optimizer_stepped(self, optimizer_id: int, now_s: float) -> dict[str, Any] | None:
        """A step record if this optimizer step ends a step, else None."""
        if self.explicit or not self._is_clock(optimizer_id):
            return None
        return self._end(now_s)

    def user_stepped(self, now_s: float) -> dict[str, Any] | None:
        """A step record for `torchtop.step()`; the first call only takes over from the hooks."""
        if not self.explicit:
            self.explicit = True
            if self._clock_id is not None:
                # The hooks already ended this step a moment ago: re-anchor, count nothing.
                self.last_end_s = now_s
                self.data_wait_s = 0.0
                return None
        return self._end(now_s)

    def _is_clock(self, optimizer_id: int) -> bool:
        if self._clock_id is None or optimizer_id == self._clock_id:
            self._clock_id = optimizer_id
            self._rival_id, self._rival_steps = None, 0
            return True
        if optimizer_id != self._rival_id:
            self._rival_id, self._rival_steps = optimizer_id, 0
        self._rival_steps += 1
        if self._rival_steps >= 2:
            self._clock_id = optimizer_id
            self._rival_id, self._rival_steps = None, 0
            return True
        return False

    def _end(self, now_s: float) -> dict[str, Any]:
        wall_s = None if self.last_end_s is None else round(now_s - self.last_end_s, 6)
        record = {
            "kind": "step",
            "step": self.count,
            "wall_s": wall_s,
            "data_wait_s": round(self.data_wait_s, 6) if self.data_seen else None,
            "h2d_s": None,
            "sync_s": None,
        }
        self.count += 1
        self.last_end_s = now_s
        self.data_wait_s = 0.0
        return record
