"""What a run folder says so far: the job's steps, settings, windows, samples and ending.

`RunWatcher.poll()` reads only what was appended since the last poll, so the live view can call
it every second on a run of hours; `load_run()` reads a finished folder in one go through the
same code. Records arrive typed (`runs.records`, decoded by `runs.codec`); what a newer writer
added is skipped and counted here (`unknown_kinds`, `unknown_fields`). Buffers are bounded: the
newest `MAX_STEPS` step records per process, and per sample source the newest records in
`Samples` (an hour of host and GPU samples, only the few stack dumps that anything reads).
Every step's number and wall time are also kept, for the step figures of the whole run, in
`StepWalls`: two numpy arrays grown in chunks (8 bytes a step, 8 MB for a million steps)
rather than an object per step.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

import msgspec
import numpy as np

from torchtop.model.report import LastStack, StackLine
from torchtop.runs.journal import JournalReader, read_record
from torchtop.runs.layout import RunLayout
from torchtop.runs.long_series import MemorySeries, StackMarks
from torchtop.runs.memory_tally import MemoryTally
from torchtop.runs.records import (
    Bye,
    ExitRecord,
    GpuSample,
    Hello,
    HostSample,
    ModulesStarted,
    ModuleTimes,
    Note,
    Number,
    RanksSeen,
    Record,
    RunRecord,
    Settings,
    StacksSample,
    StackThread,
    Step,
    Unavailable,
    Window,
)
from torchtop.runs.step_blocks import StepBlocks

MAX_STEPS = 4096
STEP_NUMBER_MAX = 2**31 - 1
MAX_SAMPLES = 3600
# A py-spy dump holds every thread's whole stack, and only the newest are read: attach's
# assessment attributes the last 60 records (assess.attached.RECENT_DUMPS), the hot-stacks panel
# counts the last 10 (tui.hotstacks.DUMPS_COUNTED). tests/runs/test_state.py holds this bound to
# the larger of the two, so a reader that wants more fails a test instead of reading fewer.
MAX_STACK_DUMPS = 60
SAMPLE_SOURCES = ("host", "gpu", "stacks", "ranks")
MAX_STACK_FRAMES = 64
"""A rank's last stack keeps at most this many frames: where it is deeper, the innermost and
the `OUTER_STACK_FRAMES` outermost, so a rank deep in an import or a library still shows the
job's own lines that led there."""
OUTER_STACK_FRAMES = 16


class StepRecord(msgspec.Struct, gc=False):
    """One timed step as the live side keeps it. Numbers only, so the garbage collector need
    not track it (`gc=False`): 512 ranks keep ~260,000 of them, and a full collection walking
    them all took 100-250 ms, one tick in ten over budget."""

    pid: int
    step: int
    t: float
    wall_s: float
    data_wait_s: float | None
    h2d_s: float | None
    sync_s: float | None
    backward_s: float | None = None
    """Time in `backward()`, which under DDP holds the wait for the other ranks."""
    rss_bytes: int | None = None
    cuda_peak_allocated_bytes: int | None = None
    cuda_reserved_bytes: int | None = None
    data_cpu_s: float | None = None
    """The stepping thread's CPU time inside the DataLoader's `__next__` (the Step's)."""


class StepWalls:
    """Every timed step of one process: its number and wall time, in arrays grown in chunks.

    float32 keeps a wall to 7 significant digits (0.1 us in a 1 s step); sums are taken in
    float64, so a million steps' total is as exact as the walls themselves. Each step's end
    time is kept too (float64, 8 bytes more a step): the long run's stalls are placed in time,
    where the stack samples taken during them are found."""

    CHUNK = 4096

    def __init__(self) -> None:
        self._numbers = np.empty(self.CHUNK, dtype=np.int32)
        self._walls = np.empty(self.CHUNK, dtype=np.float32)
        self._ends = np.empty(self.CHUNK, dtype=np.float64)
        self.count = 0

    def append(self, number: int, wall_s: float, end_t: float = np.nan) -> None:
        if self.count == len(self._walls):
            # Doubling keeps appends amortised O(1) over millions of steps.
            size = 2 * len(self._walls)
            self._numbers = np.resize(self._numbers, size)
            self._walls = np.resize(self._walls, size)
            self._ends = np.resize(self._ends, size)
        # Numbers only place the warm-up cut: past 2**31 steps they may saturate.
        self._numbers[self.count] = max(min(number, STEP_NUMBER_MAX), -STEP_NUMBER_MAX)
        self._walls[self.count] = wall_s
        self._ends[self.count] = end_t
        self.count += 1

    def columns_since(self, first_step: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The numbers, walls (s, float64) and end times of the steps from `first_step` on."""
        numbers = self._numbers[: self.count]
        kept = numbers >= first_step
        walls = self._walls[: self.count][kept].astype(np.float64)
        return numbers[kept].astype(np.int64), walls, self._ends[: self.count][kept]

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
    hello: Hello | None = None
    settings: Settings | None = None
    """The newest `settings` record; None until the agent wrote one."""
    steps: deque[StepRecord] = field(default_factory=lambda: deque(maxlen=MAX_STEPS))
    steps_seen: int = 0
    walls: StepWalls = field(default_factory=StepWalls)
    """Every timed step since the process started, for the whole run's step figures; `steps`
    holds only the newest records, with their DataLoader waits."""
    blocks: StepBlocks = field(default_factory=StepBlocks)
    """Every counted step's busy and wall time, summed in blocks, for the straggler judgement
    over the whole run (`assess.stragglers`)."""
    windows: list[Window] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    ended: bool = False
    node: str | None = None
    """The node it ran on, in a run folder several launchers share (`runs.nodes`)."""
    folder: Path | None = None
    """The run folder its windows' paths are relative to, where not the state's (a node's)."""
    bye: Bye | None = None
    """How the process said it ended (`bye`); None while it runs, or if it died unheard."""
    error: tuple[str, ...] = ()
    """The uncaught exception it ended with, as its agent recorded it (its own `bye`'s
    `error`), kept when its parent's `bye` follows."""
    last_t: float | None = None
    """The time of its newest timed record: when it was last heard from."""
    last_stack: LastStack | None = None
    """Its main thread in the newest stack dump that had it (`samples/stacks.jsonl`)."""
    memory: MemoryTally = field(default_factory=MemoryTally)
    """Its memory over the whole run, from the steps' figures (`runs.memory_tally`)."""
    memory_series: MemorySeries = field(default_factory=MemorySeries)
    """Its memory at step ends over the whole run, thinned evenly (`runs.long_series`)."""
    modules_started: ModulesStarted | None = None
    """Its newest module timing period's start; `module_times` is newer once it is done."""
    module_times: ModuleTimes | None = None
    """What its newest finished module timing period measured."""

    @property
    def rank(self) -> int | None:
        return self.hello.rank if self.hello is not None else None

    @property
    def argv(self) -> tuple[str, ...] | None:
        """The script's `sys.argv`, from its `hello`."""
        argv = self.hello.argv if self.hello is not None else None
        return tuple(argv) if argv is not None else None

    @property
    def label(self) -> str:
        return f"rank {self.rank}" if self.rank is not None else f"pid {self.pid}"


@dataclass
class SampleFigures:
    """The figures a node's summary reads (`assess.nodes`) of its newest `MAX_SAMPLES` host and
    GPU samples: the measured values only, oldest first, each list as long as what it holds,
    so the summary is a sum over them rather than a pass over an hour of samples each tick.
    A node of a shared run keeps these instead of an hour of whole samples (~3 KB each)."""

    cpu_pct: deque[float] = field(default_factory=deque)
    mem_used_bytes: deque[Number] = field(default_factory=deque)
    gpu_utilization_pct: deque[float] = field(default_factory=deque)
    _host: deque[tuple[bool, bool]] = field(default_factory=deque)
    """Per host sample kept: whether it measured the CPU and the memory."""
    _gpu: deque[int] = field(default_factory=deque)
    """Per GPU sample kept: how many utilizations it measured."""

    def add_host(self, sample: HostSample) -> None:
        if len(self._host) == MAX_SAMPLES:
            cpu, memory = self._host.popleft()
            if cpu:
                self.cpu_pct.popleft()
            if memory:
                self.mem_used_bytes.popleft()
        self._host.append((sample.cpu_pct is not None, sample.mem_used_bytes is not None))
        if sample.cpu_pct is not None:
            self.cpu_pct.append(float(sample.cpu_pct))
        if sample.mem_used_bytes is not None:
            self.mem_used_bytes.append(sample.mem_used_bytes)

    def add_gpu(self, sample: GpuSample) -> None:
        if len(self._gpu) == MAX_SAMPLES:
            for _ in range(self._gpu.popleft()):
                self.gpu_utilization_pct.popleft()
        values = [d.utilization_gpu_pct for d in sample.devices]
        measured = [float(v) for v in values if v is not None]
        self._gpu.append(len(measured))
        self.gpu_utilization_pct.extend(measured)


@dataclass
class Samples:
    """The newest samples of each source: an hour of host and GPU samples, the stack dumps
    that are read (`MAX_STACK_DUMPS`); a node of a shared run keeps fewer whole host and GPU
    samples and the `figures` of an hour's."""

    host: deque[HostSample] = field(default_factory=lambda: deque(maxlen=MAX_SAMPLES))
    gpu: deque[GpuSample] = field(default_factory=lambda: deque(maxlen=MAX_SAMPLES))
    stacks: deque[StacksSample] = field(default_factory=lambda: deque(maxlen=MAX_STACK_DUMPS))
    figures: SampleFigures | None = None

    @classmethod
    def keeping(cls, samples: int) -> Samples:
        """Samples that keep only the newest `samples` whole host and GPU samples."""
        if samples >= MAX_SAMPLES:
            return cls()
        return cls(deque(maxlen=samples), deque(maxlen=samples), figures=SampleFigures())

    def newest_t(self) -> list[float | None]:
        """The time of each source's newest sample."""
        return [samples[-1].t for samples in (self.host, self.gpu, self.stacks) if samples]

    def add(self, record: HostSample | GpuSample | StacksSample) -> None:
        figures = self.figures
        if isinstance(record, HostSample):
            self.host.append(record)
            if figures is not None:
                figures.add_host(record)
        elif isinstance(record, GpuSample):
            self.gpu.append(record)
            if figures is not None:
                figures.add_gpu(record)
        else:
            self.stacks.append(record)


@dataclass
class RunState:
    layout: RunLayout
    run: RunRecord | None = None
    processes: dict[int, ProcessState] = field(default_factory=dict)
    samples: Samples = field(default_factory=Samples)
    unavailable: dict[str, str] = field(default_factory=dict)
    sampler_notes: list[str] = field(default_factory=list)
    """What the launcher's samplers noted (a collector that raised), in the samples files."""
    exit: ExitRecord | None = None
    torn_lines: int = 0
    """Torn or unreadable lines skipped (the count of all files)."""
    unknown_kinds: int = 0
    """Records of a kind this version does not know (a newer writer's), skipped."""
    unknown_fields: int = 0
    """Fields this version does not know, dropped from the records that were read."""
    nodes: dict[str, RunState] = field(default_factory=dict)
    """Each node's own state, by name, in a run folder several launchers share; empty for a
    single launcher's folder."""
    ranks_seen: list[RanksSeen] = field(default_factory=list)
    """`attach`: each change of the job's ranks (`samples/ranks.jsonl`), oldest first."""
    stack_samples: dict[int, int] = field(default_factory=dict)
    """Main-thread stack samples per pid over the whole run, past the dump buffer: a
    restarted rank's earlier process keeps its count."""
    stack_marks: StackMarks = field(default_factory=StackMarks)
    """The main threads' sampled stacks with their times, past the dump buffer: where the
    long run's stalls were (`runs.long_series`)."""

    @property
    def launch(self) -> RunRecord:
        """`run.json`, or a record with nothing known while it is not written yet."""
        return self.run if self.run is not None else RunRecord()

    @property
    def training_processes(self) -> list[ProcessState]:
        """Processes that reported steps, by rank; the others (launchers, tools) are left out."""
        stepping = [p for p in self.processes.values() if p.steps_seen]
        return sorted(stepping, key=lambda p: (p.rank is None, p.rank or 0, p.pid))

    @property
    def windows(self) -> list[Path]:
        paths = [
            (p.folder or self.layout.root) / w.path
            for p in self.processes.values()
            for w in p.windows
        ]
        return [p for p in paths if p.is_file()]


class RunWatcher:
    """Tails a run folder; each `poll` folds new records into `state`."""

    def __init__(
        self, root: Path, max_steps: int = MAX_STEPS, max_samples: int = MAX_SAMPLES
    ) -> None:
        self.state = RunState(RunLayout(root), samples=Samples.keeping(max_samples))
        self.max_steps = max_steps
        """The newest step records kept per process (`ProcessState.steps`)."""
        self._agents: dict[Path, JournalReader] = {}
        self._samples = {s: JournalReader(self.state.layout.samples(s)) for s in SAMPLE_SOURCES}

    def poll(self, final: bool = False) -> RunState:
        state = self.state
        if state.run is None:
            state.run = read_record(state.layout.run_json, RunRecord)
        if state.layout.events_dir.is_dir():
            for path in sorted(state.layout.events_dir.glob("agent-*.jsonl")):
                reader = self._agents.get(path)
                if reader is None:
                    reader = self._agents[path] = JournalReader(path)
                pid = _pid_of(path)
                for record in reader.read_new(final):
                    _apply_agent_record(state, pid, record, self.max_steps)
        for source, reader in self._samples.items():
            for record in reader.read_new(final):
                _apply_sample(state, source, record)
        if state.exit is None:
            state.exit = read_record(state.layout.exit_json, ExitRecord)
        readers = [*self._agents.values(), *self._samples.values()]
        state.torn_lines = sum(r.torn_lines + r.bad_lines for r in readers)
        state.unknown_kinds = sum(r.decoded.unknown_kinds for r in readers)
        state.unknown_fields = sum(r.decoded.unknown_fields for r in readers)
        return state


def load_run(root: Path) -> RunState:
    watcher = RunWatcher(root)
    return watcher.poll(final=True)


def _pid_of(path: Path) -> int:
    try:
        return int(path.stem.split("-", 1)[1])
    except (IndexError, ValueError):
        return -1


def _apply_sample(state: RunState, source: str, record: Record) -> None:
    if isinstance(record, Unavailable):
        state.unavailable[source] = record.reason
    elif isinstance(record, Note):
        state.sampler_notes.append(record.message)
    elif isinstance(record, RanksSeen):
        state.ranks_seen.append(record)
    elif isinstance(record, HostSample | GpuSample | StacksSample):
        state.samples.add(record)
        if isinstance(record, StacksSample):
            _keep_last_stacks(state, record)
            _count_samples(state.stack_samples, record)


def _keep_last_stacks(state: RunState, record: StacksSample) -> None:
    """Each agent process's newest dump, kept past the dump buffer: where a dead rank was."""
    for dumped in record.processes:
        process = state.processes.get(dumped.pid)
        thread = main_thread(dumped.pid, dumped.threads)
        if thread is None:
            continue
        frames = bounded_frames(frames_of(thread))
        if process is not None:
            process.last_stack = LastStack(record.t, frames)
        if dumped.role != "worker":
            state.stack_marks.add(record.t, dumped.pid, frames)


def frames_of(thread: StackThread) -> tuple[StackLine, ...]:
    return tuple(StackLine(f.function, f.file, f.line) for f in thread.frames)


def bounded_frames(frames: tuple[StackLine, ...]) -> tuple[StackLine, ...]:
    """At most `MAX_STACK_FRAMES`, innermost first: the outermost `OUTER_STACK_FRAMES` kept."""
    if len(frames) <= MAX_STACK_FRAMES:
        return frames
    return frames[: MAX_STACK_FRAMES - OUTER_STACK_FRAMES] + frames[-OUTER_STACK_FRAMES:]


def _count_samples(counts: dict[int, int], record: StacksSample) -> None:
    for process in record.processes:
        main = sum(1 for t in process.threads if t.tid == process.pid)
        if main:
            counts[process.pid] = counts.get(process.pid, 0) + main


def main_thread(pid: int, threads: list[StackThread]) -> StackThread | None:
    """The thread that runs the script: the one whose id is the pid (Linux), by name else,
    else the first with frames (torchtop's own threads are not it)."""
    with_frames = [t for t in threads if t.frames]
    for found in (
        next((t for t in with_frames if t.tid == pid), None),
        next((t for t in with_frames if t.name == "MainThread"), None),
        next((t for t in with_frames if not (t.name or "").startswith("torchtop-")), None),
    ):
        if found is not None:
            return found
    return None


def _apply_agent_record(
    state: RunState, pid: int, record: Record, max_steps: int = MAX_STEPS
) -> None:
    process = state.processes.get(pid)
    if process is None:
        # Made only when new: a ProcessState allocates its step buffers.
        process = state.processes[pid] = ProcessState(pid, steps=deque(maxlen=max_steps))
    record_t = getattr(record, "t", None)
    if isinstance(record_t, float) and record_t > (process.last_t or 0.0):
        process.last_t = record_t
    if isinstance(record, Step):
        if record.wall_s is not None and record.wall_s >= 0:
            process.steps.append(_step(pid, record, record.wall_s))
            process.walls.append(record.step, record.wall_s, record.t)
            waited_s = record.backward_s if isinstance(record.backward_s, float) else 0.0
            busy_s = record.wall_s - waited_s
            process.blocks.add(record.step, record.wall_s, busy_s, record.t)
            process.steps_seen += 1
        process.memory.add(record)
        process.memory_series.add(record)
    elif isinstance(record, Hello):
        process.hello = record
    elif isinstance(record, Settings):
        process.settings = record
    elif isinstance(record, Window):
        process.windows.append(record)
    elif isinstance(record, Note):
        process.notes.append(record.message)
    elif isinstance(record, Bye):
        process.ended = True
        process.bye = record
        if isinstance(record.error, list):
            process.error = tuple(record.error)
    elif isinstance(record, ModulesStarted):
        process.modules_started = record
    elif isinstance(record, ModuleTimes):
        process.module_times = record


def _step(pid: int, record: Step, wall_s: float) -> StepRecord:
    return StepRecord(
        pid=pid,
        step=record.step,
        t=record.t,
        wall_s=wall_s,
        data_wait_s=record.data_wait_s,
        h2d_s=record.h2d_s,
        sync_s=record.sync_s,
        backward_s=record.backward_s if isinstance(record.backward_s, float) else None,
        rss_bytes=_int(record.rss_bytes),
        cuda_peak_allocated_bytes=_int(record.cuda_peak_allocated_bytes),
        cuda_reserved_bytes=_int(record.cuda_reserved_bytes),
        data_cpu_s=record.data_cpu_s if isinstance(record.data_cpu_s, int | float) else None,
    )


def _int(value: object) -> int | None:
    return value if isinstance(value, int) else None
