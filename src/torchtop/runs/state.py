"""What a run folder says so far: the job's steps, settings, windows, samples and ending.

`RunWatcher.poll()` reads only what was appended since the last poll, so the live view can call
it every second on a run of hours; `load_run()` reads a finished folder in one go through the
same code. Buffers are bounded: the newest `MAX_STEPS` step records per process, and per sample
source the newest `SAMPLES_BOUND[source]` records (an hour of host and GPU samples, only the few
stack dumps that anything reads). Every step's number and wall time are also kept, for the step
figures of the whole run, in `StepWalls`: two numpy arrays grown in chunks (8 bytes a step, 8 MB
for a million steps) rather than an object per step.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from torchtop.runs.journal import JournalReader, read_document
from torchtop.runs.layout import RunLayout

MAX_STEPS = 4096
STEP_NUMBER_MAX = 2**31 - 1
MAX_SAMPLES = 3600
# A py-spy dump holds every thread's whole stack, and only the newest are read: attach's
# assessment attributes the last 60 records (assess.attached.RECENT_DUMPS), the hot-stacks panel
# counts the last 10 (tui.hotstacks.DUMPS_COUNTED). tests/runs/test_state.py holds this bound to
# the larger of the two, so a reader that wants more fails a test instead of reading fewer.
MAX_STACK_DUMPS = 60
SAMPLES_BOUND = {"host": MAX_SAMPLES, "gpu": MAX_SAMPLES, "stacks": MAX_STACK_DUMPS}
SAMPLE_SOURCES = tuple(SAMPLES_BOUND)


@dataclass
class StepRecord:
    pid: int
    step: int
    t: float
    wall_s: float
    data_wait_s: float | None
    h2d_s: float | None
    sync_s: float | None


class StepWalls:
    """Every timed step of one process: its number and wall time, in arrays grown in chunks.

    float32 keeps a wall to 7 significant digits (0.1 us in a 1 s step); sums are taken in
    float64, so a million steps' total is as exact as the walls themselves."""

    CHUNK = 4096

    def __init__(self) -> None:
        self._numbers = np.empty(self.CHUNK, dtype=np.int32)
        self._walls = np.empty(self.CHUNK, dtype=np.float32)
        self.count = 0

    def append(self, number: int, wall_s: float) -> None:
        if self.count == len(self._walls):
            # Doubling keeps appends amortised O(1) over millions of steps.
            size = 2 * len(self._walls)
            self._numbers = np.resize(self._numbers, size)
            self._walls = np.resize(self._walls, size)
        # Numbers only place the warm-up cut: past 2**31 steps they may saturate.
        self._numbers[self.count] = max(min(number, STEP_NUMBER_MAX), -STEP_NUMBER_MAX)
        self._walls[self.count] = wall_s
        self.count += 1

    def since(self, first_step: int) -> np.ndarray:
        """The wall times (s) of the steps numbered `first_step` or later, oldest first."""
        numbers = self._numbers[: self.count]
        return self._walls[: self.count][numbers >= first_step]

    def __len__(self) -> int:
        return self.count


@dataclass
class ProcessState:
    """One agent process (one rank, or the only training process)."""

    pid: int
    hello: dict[str, Any] = field(default_factory=dict)
    settings: dict[str, Any] = field(default_factory=dict)
    steps: deque[StepRecord] = field(default_factory=lambda: deque(maxlen=MAX_STEPS))
    steps_seen: int = 0
    walls: StepWalls = field(default_factory=StepWalls)
    """Every timed step since the process started, for the whole run's step figures; `steps`
    holds only the newest records, with their DataLoader waits."""
    windows: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    ended: bool = False

    @property
    def rank(self) -> int | None:
        rank = self.hello.get("rank")
        return rank if isinstance(rank, int) else None

    @property
    def label(self) -> str:
        return f"rank {self.rank}" if self.rank is not None else f"pid {self.pid}"


@dataclass
class RunState:
    layout: RunLayout
    run: dict[str, Any] = field(default_factory=dict)
    processes: dict[int, ProcessState] = field(default_factory=dict)
    samples: dict[str, deque[dict[str, Any]]] = field(
        default_factory=lambda: {s: deque(maxlen=n) for s, n in SAMPLES_BOUND.items()}
    )
    unavailable: dict[str, str] = field(default_factory=dict)
    exit: dict[str, Any] | None = None
    torn_lines: int = 0

    @property
    def training_processes(self) -> list[ProcessState]:
        """Processes that reported steps, by rank; the others (launchers, tools) are left out."""
        stepping = [p for p in self.processes.values() if p.steps_seen]
        return sorted(stepping, key=lambda p: (p.rank is None, p.rank or 0, p.pid))

    @property
    def windows(self) -> list[Path]:
        paths = [self.layout.root / w["path"] for p in self.processes.values() for w in p.windows]
        return [p for p in paths if p.is_file()]


class RunWatcher:
    """Tails a run folder; each `poll` folds new records into `state`."""

    def __init__(self, root: Path) -> None:
        self.state = RunState(RunLayout(root))
        self._agents: dict[Path, JournalReader] = {}
        self._samples = {s: JournalReader(self.state.layout.samples(s)) for s in SAMPLE_SOURCES}

    def poll(self, final: bool = False) -> RunState:
        state = self.state
        if not state.run:
            state.run = read_document(state.layout.run_json) or {}
        if state.layout.events_dir.is_dir():
            for path in sorted(state.layout.events_dir.glob("agent-*.jsonl")):
                reader = self._agents.setdefault(path, JournalReader(path))
                for record in reader.read_new(final):
                    _apply_agent_record(state, _pid_of(path), record)
        for source, reader in self._samples.items():
            for record in reader.read_new(final):
                if record.get("kind") == "unavailable":
                    state.unavailable[source] = str(record.get("reason", "not measured"))
                else:
                    state.samples[source].append(record)
        if state.exit is None:
            state.exit = read_document(state.layout.exit_json)
        readers = [*self._agents.values(), *self._samples.values()]
        state.torn_lines = sum(r.torn_lines + r.bad_lines for r in readers)
        return state


def load_run(root: Path) -> RunState:
    watcher = RunWatcher(root)
    return watcher.poll(final=True)


def _pid_of(path: Path) -> int:
    try:
        return int(path.stem.split("-", 1)[1])
    except (IndexError, ValueError):
        return -1


def _apply_agent_record(state: RunState, pid: int, record: dict[str, Any]) -> None:
    process = state.processes.setdefault(pid, ProcessState(pid))
    kind = record.get("kind")
    if kind == "hello":
        process.hello = record
    elif kind == "settings":
        process.settings = record
    elif kind == "step":
        step = _step(pid, record)
        if step is not None:
            process.steps.append(step)
            process.walls.append(step.step, step.wall_s)
            process.steps_seen += 1
    elif kind == "window":
        process.windows.append(record)
    elif kind == "note":
        process.notes.append(str(record.get("message", "")))
    elif kind == "bye":
        process.ended = True


def _step(pid: int, record: dict[str, Any]) -> StepRecord | None:
    wall = _float(record.get("wall_s"))
    if wall is None or wall < 0:
        return None
    return StepRecord(
        pid=pid,
        step=int(record.get("step", 0)),
        t=_float(record.get("t")) or 0.0,
        wall_s=wall,
        data_wait_s=_float(record.get("data_wait_s")),
        h2d_s=_float(record.get("h2d_s")),
        sync_s=_float(record.get("sync_s")),
    )


def _float(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)
