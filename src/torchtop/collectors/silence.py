"""Ranks that fell silent, seen from the launcher, and a stack dump of each taken at once.

A hung rank is alive and writes nothing, and the question is where it hangs. The periodic dump
(every few seconds) may predate the hang, so when a rank goes silent its process is dumped
then: that is the stack the report shows as its last. `SilenceWatch` tells from the agents'
journals alone (no parsing of records, only sizes), the way `assess.ranks` tells it from the
records: a journal that has steps and stopped growing `silent_after_s` ago while another one
that steps grew since. Each silence is named once; a journal that grows again is watched anew.

A step that runs long (a checkpoint save every 40 steps, an evaluation) is where the long
run's stalls are located (`assess.long_run`), and a dump every few seconds seldom falls inside
one. `SilenceWatch.newly_slow` names, once per quiet spell, a rank whose journal has been
quiet (by its file's modification time) for `SLOW_FACTOR` times its usual quiet at a tick and
at least `SLOW_MIN_S`: the agent writes its steps every 50 ms or each step, whichever is
longer, so a journal of short steps that stops growing is inside a long step. Its usual quiet
is the lower quartile of its recent ones: stalls may take half the ticks (a 1 s checkpoint
every second of steps), and a median among them would call the stalls usual.

`StacksSchedule` is the stacks sampler's function: a full dump of the job every `every_s`,
and between them a dump of only the newly silent ranks, or else of the ranks inside a long
step.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from torchtop.runs.records import StacksSample, Unavailable

SLOW_MIN_S = 0.25
SLOW_FACTOR = 4.0
SLOW_HISTORY = 30
"""Ticks of quiet remembered per journal for its usual quiet (their lower quartile)."""
SLOW_AFTER_TICKS = 5
"""No long step is named before this many ticks of a journal's steps were seen."""
STEP_MARK = b'"kind":"step"'
READ_FOR_STEP_BYTES = 1 << 20
"""A journal is read (its new bytes) for a first step record at most this far."""


@dataclass
class _Journal:
    size: int = 0
    grew_s: float = 0.0
    """When its size last changed (the clock's time)."""
    steps: bool = False
    named: bool = False
    """Named silent already, since it last grew."""
    modified_t: float = 0.0
    """Its modification time (Unix time), as of the last scan."""
    quiet_s: deque[float] = field(default_factory=lambda: deque(maxlen=SLOW_HISTORY))
    """Its quiet at each of the recent scans since it had steps."""
    named_slow: bool = False
    """Named inside a long step already, since it last grew."""


class SilenceWatch:
    """Watches the agents' journals (`agent-<pid>.jsonl`) of the `own` events folder for
    silence; `peers` are further folders (the other nodes' of a shared run) whose growth
    also counts as a peer going on, read only where `own` has a single rank."""

    def __init__(
        self,
        own: Path,
        silent_after_s: float,
        peers: Callable[[], Iterable[Path]] = tuple,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
    ) -> None:
        self.own, self.silent_after_s = own, silent_after_s
        self._peers, self._clock, self._wall = peers, clock, wall
        self._journals: dict[Path, _Journal] = {}

    def newly_silent(self) -> list[int]:
        """The pids of this node's ranks that fell silent since the last call."""
        now_s = self._clock()
        own = self._scan(self.own, now_s)
        # Other nodes' journals only where this node has no peer of its own: each launcher
        # stat-ing every node's files every second would load a shared filesystem's metadata
        # server with nodes x ranks calls a second.
        if sum(journal.steps for _, journal in own) < 2:
            for folder in self._peers():
                if folder != self.own:
                    self._scan(folder, now_s)
        stepping = [j for j in self._journals.values() if j.steps]
        found = []
        for path, journal in own:
            quiet_s = now_s - journal.grew_s
            if journal.named or not journal.steps or quiet_s < self.silent_after_s:
                continue
            if any(other.grew_s > journal.grew_s for other in stepping if other is not journal):
                journal.named = True
                found.append(int(path.stem.removeprefix("agent-")))
        return found

    def newly_slow(self) -> list[int]:
        """The pids of this node's ranks that are inside a step far longer than their usual,
        each named once until its journal grows again."""
        now_t = self._wall()
        found = []
        for path, journal in self._scan(self.own, self._clock()):
            if not journal.steps:
                continue
            quiet = max(now_t - journal.modified_t, 0.0)
            usual = sorted(journal.quiet_s)[len(journal.quiet_s) // 4] if journal.quiet_s else 0
            ready = len(journal.quiet_s) >= SLOW_AFTER_TICKS
            journal.quiet_s.append(quiet)
            if ready and not journal.named_slow and quiet >= max(SLOW_MIN_S, SLOW_FACTOR * usual):
                journal.named_slow = True
                found.append(int(path.stem.removeprefix("agent-")))
        return found

    def _scan(self, folder: Path, now_s: float) -> list[tuple[Path, _Journal]]:
        seen = []
        for path in sorted(folder.glob("agent-*.jsonl")):
            if not path.stem.removeprefix("agent-").isdigit():
                continue
            try:
                status = path.stat()
            except OSError:
                continue
            size = status.st_size
            journal = self._journals.setdefault(path, _Journal(grew_s=now_s))
            journal.modified_t = status.st_mtime
            if size != journal.size:
                if not journal.steps:
                    journal.steps = _has_step(path, journal.size, size)
                journal.size, journal.grew_s, journal.named = size, now_s, False
                journal.named_slow = False
            seen.append((path, journal))
        return seen


def _has_step(path: Path, start: int, end: int) -> bool:
    """Whether the bytes appended between `start` and `end` hold a step record (a line may be
    cut at `start`: the step mark is short and read from a little before)."""
    begin = max(0, start - len(STEP_MARK))
    try:
        with path.open("rb") as handle:
            handle.seek(begin)
            return STEP_MARK in handle.read(min(end - begin, READ_FOR_STEP_BYTES))
    except OSError:
        return False


class Dumper(Protocol):
    def sample(self, only: Iterable[int] | None = None) -> StacksSample | Unavailable | None: ...


@dataclass
class StacksSchedule:
    """Called every tick: the whole job's stacks every `every_s`, the silent ranks' at once."""

    stacks: Dumper
    silence: SilenceWatch
    every_s: float
    clock: Callable[[], float] = time.monotonic
    _full_s: float | None = None

    def __call__(self) -> StacksSample | Unavailable | None:
        """The newly silent ranks' dump comes first, alone (the record the report points to);
        a full dump that falls due on the same tick waits for the next one."""
        now_s = self.clock()
        silent = self.silence.newly_silent()
        if silent:
            return self.stacks.sample(only=silent)
        if self._full_s is None or now_s - self._full_s >= self.every_s:
            self._full_s = now_s
            return self.stacks.sample()
        slow = self.silence.newly_slow()
        return self.stacks.sample(only=slow) if slow else None
