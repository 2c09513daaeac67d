"""Turns step-end signals into step records: wall time and DataLoader wait per step.

Four signals can mark step ends, in order of preference: `torchtop.step()` (explicit), an
optimizer step hook, the end of a `backward()` call, and a DataLoader batch arriving. Every
training loop gives at least one of the lower ones, so a loop without `torch.optim` is still
timed. The best signal seen so far marks the steps; a better one that appears later takes
over, and no step is counted twice:

- A lower signal's steps are held back (provisional) while a better one may still come, for
  at most `HOLD_S[level]`: `backward()` steps while an optimizer exists that has not stepped
  yet (gradient accumulation calls backward several times per optimizer step); DataLoader
  batches, also until `HOLD_BATCHES` are held (a `backward()` normally follows each, and a
  loop may first iterate a loader for something else: a sanity check, a look at its
  workers). When the better signal comes, the held records are dropped: they were parts of
  one of its steps. At exit they are released.
- Steps already released under a lower signal stay; the better signal's first call only
  re-anchors (the lower signal ended this step a moment ago).

When several optimizers step (a GAN, an optimizer wrapping another), the first one to step is
the clock; another takes over only if it steps twice while the clock does not (the clock was
replaced). Pure: the caller passes the time, so tests need no sleeping.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, TypedDict

DATALOADER, BACKWARD, OPTIMIZER, EXPLICIT = range(4)
# Indexed by level; these names are the `step_signal` of the agent's `settings` record.
SIGNAL_NAMES = ("dataloader", "backward", "optimizer", "explicit")
# How long a signal's steps are held back before they count: an optimizer that exists but
# has not stepped after 30 s of backward() calls is not the loop's clock (created, never
# used); a loop that iterates a loader for 10 s without a backward() is not training.
HOLD_S = {BACKWARD: 30.0, DATALOADER: 10.0}
# And batches are held until there are this many: a short look at a loader before training
# (Lightning's sanity check takes 2 batches; a first pass that starts workers) may take longer
# than 10 s on a loaded machine, and must not become steps.
HOLD_BATCHES = 8
# Past this many held records, they are released whatever the time (bounded memory).
HOLD_MAX = 4096


class EndedStep(TypedDict):
    """One ended step as the clock releases it: the fields of the `step` record the agent
    writes, and `end_s`, its end on the agent's `perf_counter` clock (made the record's Unix
    time `t` when written). A plain dict on purpose: one is made per step in the job's loop."""

    kind: Literal["step"]
    step: int
    wall_s: float | None
    data_wait_s: float | None
    data_cpu_s: float | None
    h2d_s: float | None
    sync_s: float | None
    backward_s: float | None
    end_s: float


@dataclass
class StepClock:
    count: int = 0
    last_end_s: float | None = None
    data_wait_s: float = 0.0
    data_seen: bool = False
    data_cpu_s: float | None = 0.0
    """The stepping thread's CPU time inside those waits; None once a wait came without it."""
    backward_s: float = 0.0
    backward_seen: bool = False
    level: int | None = None
    optimizer_exists: bool = False
    released_level: int | None = None
    pending: list[EndedStep] = field(default_factory=list)
    _pending_since_s: float = 0.0
    _clock_id: int | None = None
    _rival_id: int | None = None
    _rival_steps: int = 0

    @property
    def signal(self) -> str | None:
        """The name of the signal whose steps were released last (None before any)."""
        return None if self.released_level is None else SIGNAL_NAMES[self.released_level]

    @property
    def held(self) -> str | None:
        """The name of the signal whose steps are held back now (None when none are)."""
        return SIGNAL_NAMES[self.level] if self.pending and self.level is not None else None

    def accepts(self, level: int) -> bool:
        """Whether a signal of this level may still end steps (cheap: the hot-path check)."""
        return self.level is None or level >= self.level

    def add_backward(self, seconds: float) -> None:
        self.backward_s += seconds
        self.backward_seen = True

    def add_data_wait(self, seconds: float, cpu_s: float | None = None) -> None:
        self.data_wait_s += seconds
        self.data_seen = True
        self.data_cpu_s = _add(self.data_cpu_s, cpu_s)

    def optimizer_stepped(self, optimizer_id: int, now_s: float) -> list[EndedStep]:
        """The step records this optimizer step releases (none when another optimizer is the
        clock, or when it only takes over from a lower signal)."""
        if not self.accepts(OPTIMIZER):
            return []
        if self.level == OPTIMIZER and not self._is_clock(optimizer_id):
            return []
        self._clock_id = optimizer_id
        return self.signalled(OPTIMIZER, now_s)

    def user_stepped(self, now_s: float) -> list[EndedStep]:
        return self.signalled(EXPLICIT, now_s)

    def signalled(self, level: int, now_s: float) -> list[EndedStep]:
        """The step records that a signal of `level` at `now_s` releases, oldest first."""
        if not self.accepts(level):
            return []
        if (self.level is None or level > self.level) and self._take_over(level, now_s):
            return []
        record = self._end(now_s)
        if self._provisional(level, now_s):
            if not self.pending:
                self._pending_since_s = now_s
            self.pending.append(record)
            return []
        released, self.pending = [*self.pending, record], []
        self.released_level = level
        return released

    def _take_over(self, level: int, now_s: float) -> bool:
        """Switch to a better signal; True when this call only re-anchors (counts nothing)."""
        self.level = level
        self.count -= len(self.pending)
        # The held records' waits belong to the step the better signal is about to end.
        self.data_wait_s += sum(r["data_wait_s"] or 0.0 for r in self.pending)
        for held in self.pending:
            if held["data_wait_s"] is not None:
                self.data_cpu_s = _add(self.data_cpu_s, held["data_cpu_s"])
        self.backward_s += sum(r["backward_s"] or 0.0 for r in self.pending)
        self.backward_seen |= any(r["backward_s"] is not None for r in self.pending)
        self.pending = []
        if self.count == 0:
            self.last_end_s = None  # the dropped records' start is not this signal's
            return False
        self.released_level = level
        self.last_end_s = now_s
        self.data_wait_s, self.data_cpu_s = 0.0, 0.0
        self.backward_s = 0.0
        return True

    def release_held(self) -> list[EndedStep]:
        """The held records, released as they are (at exit: no better signal came)."""
        released, self.pending = self.pending, []
        if released:
            self.released_level = self.level
        return released

    def _provisional(self, level: int, now_s: float) -> bool:
        if self.released_level == level or level not in HOLD_S or len(self.pending) >= HOLD_MAX:
            return False
        if level == BACKWARD and not self.optimizer_exists:
            return False
        since_s = self._pending_since_s if self.pending else now_s
        too_few = level == DATALOADER and len(self.pending) + 1 < HOLD_BATCHES
        return too_few or now_s - since_s < HOLD_S[level]

    def _is_clock(self, optimizer_id: int) -> bool:
        if self._clock_id is None or optimizer_id == self._clock_id:
            self._rival_id, self._rival_steps = None, 0
            return True
        if optimizer_id != self._rival_id:
            self._rival_id, self._rival_steps = optimizer_id, 0
        self._rival_steps += 1
        if self._rival_steps >= 2:
            self._rival_id, self._rival_steps = None, 0
            return True
        return False

    def _end(self, now_s: float) -> EndedStep:
        wall_s = None if self.last_end_s is None else round(now_s - self.last_end_s, 6)
        record: EndedStep = {
            "kind": "step",
            "step": self.count,
            "wall_s": wall_s,
            "data_wait_s": round(self.data_wait_s, 6) if self.data_seen else None,
            "data_cpu_s": _rounded(self.data_cpu_s) if self.data_seen else None,
            "h2d_s": None,
            "sync_s": None,
            "backward_s": round(self.backward_s, 6) if self.backward_seen else None,
            # Not written: the agent turns it into the record's Unix time `t`.
            "end_s": now_s,
        }
        self.count += 1
        self.last_end_s = now_s
        self.data_wait_s, self.data_cpu_s = 0.0, 0.0
        self.backward_s, self.backward_seen = 0.0, False
        return record


def _add(total_s: float | None, seconds: float | None) -> float | None:
    """A sum that stays unknown (None) once a part of it was not measured."""
    return None if total_s is None or seconds is None else total_s + seconds


def _rounded(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds, 6)
