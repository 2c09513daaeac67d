"""A module timing period: from the step end that installs the hooks to the one that removes
them, `steps` steps later, and the records that say so (`modules_started`, `module_times`).

The agent asks for one when it sees `RUN/requests/modules` (every rank answers, as for a
profiler window) and drives it from its step ends, in the training thread. A period never
overlaps a profiler window: the hooks' own cost would be in the window's trace.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from torchtop.agent.module_timer import ModuleTimer
from torchtop.agent.step_clock import EndedStep
from torchtop.runs.records import ModulesStarted, ModuleTimes


class ModulePeriod:
    """Hooks installed before step `first_step`; done once `steps` steps have ended."""

    def __init__(self, first_step: int, steps: int, thread: int | None) -> None:
        self.first_step = first_step
        self.steps = steps
        self.timer = ModuleTimer(thread)
        self.timed = 0
        self.wall_s = 0.0

    def start(self) -> ModulesStarted:
        self.timer.install()
        return ModulesStarted(t=time.time(), first_step=self.first_step, steps=self.steps)

    def step_ended(self, records: Sequence[EndedStep]) -> bool:
        """Count the steps just released; True once the period has all its steps."""
        self.timer.step_ended()
        last = self.first_step + self.steps
        for record in records:
            if self.first_step <= record["step"] < last:
                self.timed += 1
                self.wall_s += record["wall_s"] or 0.0
        return self.timed >= self.steps

    def finish(self, device: str | None) -> ModuleTimes | None:
        """Remove the hooks; the period's record, or None where no step was timed."""
        self.timer.remove()
        if self.timed == 0:
            return None
        return ModuleTimes(
            t=time.time(),
            first_step=self.first_step,
            last_step=self.first_step + self.timed - 1,
            steps=self.timed,
            wall_s=self.wall_s,
            device=device,
            modules=self.timer.timings(),
        )
