"""What the panels show, as one immutable value: a `Frame`, built off the UI thread.

The live loop's `Snapshot` holds the run state that the next tick keeps mutating, so the tick
thread copies what the panels need (the newest samples, the hot stacks, the ranked fixes, the
history point) into a `Frame` before posting it; the widgets only ever read frames. Offline, a
`Frame` is built once from a `Report` (and, for a recorded run, its `RunState`).
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Reversible
from dataclasses import dataclass, field, replace
from itertools import islice
from pathlib import Path, PurePath
from typing import TYPE_CHECKING, TypeVar

from torchtop.assess.live_modules import modules_progress
from torchtop.assess.snapshot import Snapshot
from torchtop.model.findings import Verdict
from torchtop.model.report import Report
from torchtop.report.contract import steps_per_s as report_steps_per_s
from torchtop.runs.records import CliOption, GpuSample, HostSample
from torchtop.runs.state import ProcessState, RunState
from torchtop.tui.charts import number
from torchtop.tui.demangle import demangled
from torchtop.tui.hotstacks import DUMPS_COUNTED, HotStacks, hot_frames
from torchtop.tui.noderows import NodeRow, node_rows
from torchtop.tui.ranking import RankedFix, rank_fixes
from torchtop.tui.timeline import DEFAULT_CAPACITY, Point, Timeline

if TYPE_CHECKING:
    from torchtop.model.trials import Proposal

SAMPLES_KEPT = 240
"""Samples per source handed to the panels: four minutes at one a second, wider than any plot."""

T = TypeVar("T")


@dataclass(frozen=True)
class Frame:
    report: Report
    verdict: Verdict
    """The verdict to show: live, after hysteresis; offline, the report's."""
    live: bool
    seq: int = 0
    elapsed_s: float | None = None
    finished: bool = False
    job: str = ""
    step: int | None = None
    steps_per_s: float | None = None
    batch_size: int | None = None
    history: tuple[Point, ...] = ()
    host: tuple[HostSample, ...] = ()
    gpu: tuple[GpuSample, ...] = ()
    unavailable: Mapping[str, str] = field(default_factory=dict)
    hot: HotStacks = field(default_factory=HotStacks)
    recorded: bool = False
    """Whether host and GPU samples were recorded at all (live, or a recorded run folder)."""
    fixes: tuple[RankedFix, ...] = ()
    command: tuple[str, ...] = ()
    cli_options: tuple[CliOption, ...] = ()
    proposals: Mapping[tuple[str, str], Proposal] = field(default_factory=dict)
    """Each listed fix (by `RankedFix.key`) planned on the job as it runs now, as `a` would
    plan it: the value it would really set, or why it cannot be applied. Only under `run` and
    `demo` (with an applier); empty elsewhere."""
    nodes: tuple[NodeRow, ...] = ()
    """Each node of a run several launchers share, with its newest counters; none otherwise."""
    step_signal: str | None = None
    """What marks the job's steps (the agent's `step_signal`: optimizer, backward, ...)."""
    kernel_names: Mapping[str, str] = field(default_factory=dict)
    """Each mangled top kernel's name, demangled (`tui.demangle`); others are shown as named."""
    modules_status: str | None = None
    """Live, while the agents time their modules: `timing modules: 12/20 steps`."""

    @property
    def ranks_count(self) -> int:
        return max(len(self.report.ranks), 1)

    @property
    def samples_per_s(self) -> float | None:
        if self.steps_per_s is None or self.batch_size is None:
            return None
        return self.steps_per_s * self.batch_size * self.ranks_count


class FrameBuilder:
    """Turns each live snapshot into a frame, keeping the bounded history between ticks."""

    def __init__(self, capacity: int = DEFAULT_CAPACITY) -> None:
        self.timeline = Timeline(capacity)
        self.seq = 0
        self._pids: frozenset[int] = frozenset()
        self._root: Path | None = None

    def build(self, snapshot: Snapshot) -> Frame:
        self.seq += 1
        report, state = snapshot.report, snapshot.state
        rate = recent_steps_per_s(report)
        marker = "relaunch" if self._relaunched(state) else ""
        self.timeline.add(Point(snapshot.elapsed_s, rate, dict(report.job.breakdown), marker))
        frame = Frame(
            report=report,
            verdict=snapshot.shown,
            live=True,
            seq=self.seq,
            elapsed_s=snapshot.elapsed_s,
            finished=snapshot.finished,
            history=self.timeline.series(),
            fixes=rank_fixes(snapshot.shown),
            kernel_names=kernel_names(report),
            modules_status=modules_progress(state.training_processes),
        )
        return with_state(frame, state)

    def _relaunched(self, state: RunState) -> bool:
        """New training processes while earlier ones have said goodbye, or a new run folder
        (a fix tried from the dashboard): the job was relaunched. Ranks of one launch that
        report their first steps a tick apart are not."""
        root = state.layout.root
        moved = self._root is not None and root != self._root
        processes = state.training_processes
        pids = frozenset(p.pid for p in processes)
        new = pids - self._pids
        relaunched = bool(self._pids and new) and any(
            p.ended for p in processes if p.pid in self._pids
        )
        self._pids, self._root = pids, root
        return relaunched or moved


def offline_frame(report: Report, state: RunState | None = None) -> Frame:
    """The frame of `torchtop view`: saved traces, or a recorded run folder with its state."""
    frame = Frame(
        report=report,
        verdict=report.verdict,
        live=False,
        history=step_history(report),
        fixes=rank_fixes(report.verdict),
        kernel_names=kernel_names(report),
    )
    if state is not None:
        return with_state(frame, state)
    return replace(frame, job=trace_title(report), steps_per_s=steps_per_s(report))


def with_state(frame: Frame, state: RunState) -> Frame:
    """`frame` with the fields that come from the run state, copied so the state may move on
    (records are never changed once read, so holding them is copying them)."""
    processes = state.training_processes
    settings = processes[0].settings if processes else None
    return replace(
        frame,
        job=job_title(frame.report),
        step=max((p.steps[-1].step for p in processes if p.steps), default=None),
        steps_per_s=steps_per_s(frame.report),
        batch_size=batch_size(processes[0] if processes else None),
        host=tail(state.samples.host, SAMPLES_KEPT),
        gpu=tail(state.samples.gpu, SAMPLES_KEPT),
        unavailable=dict(state.unavailable),
        hot=hot_frames(tail(state.samples.stacks, DUMPS_COUNTED)),
        recorded=True,
        command=tuple(frame.report.command or ()),
        cli_options=tuple(settings.cli_options) if settings is not None else (),
        step_signal=settings.step_signal if settings is not None else None,
        nodes=node_rows(state, frame.report),
    )


def kernel_names(report: Report) -> Mapping[str, str]:
    return demangled(k.name for k in report.job.top_kernels)


def tail(records: Reversible[T], count: int) -> tuple[T, ...]:
    """The newest `count` records of a deque, oldest first, without copying the rest."""
    newest = list(islice(reversed(records), count))
    newest.reverse()
    return tuple(newest)


def steps_per_s(report: Report) -> float | None:
    """The header's rate: the report's own (live, the whole watched period's)."""
    return report_steps_per_s(report.job.metrics)


def recent_steps_per_s(report: Report) -> float | None:
    """The history's point: the newest steps' rate, so the trend and sparkline move with the
    job, where the whole period's rate would flatten out."""
    return number(report.job.metrics.get("recent_steps_per_s")) or steps_per_s(report)


def batch_size(process: ProcessState | None) -> int | None:
    settings = process.settings if process is not None else None
    loader = settings.dataloader if settings is not None else None
    size = loader.batch_size if loader is not None else None
    return size if size is not None and size > 0 else None


def job_title(report: Report) -> str:
    if report.attached is not None:  # `attach` to a launcher or a rank: the job, then its command
        command = f" · {shlex.join(report.command)}" if report.command else ""
        return f"attached to {report.attached.job_words}{command}"
    if report.command:
        return shlex.join(report.command)
    if report.pid is not None:
        return f"pid {report.pid}"
    return trace_title(report)


def trace_title(report: Report) -> str:
    """`resnet50/worker0.pt.trace.json.gz`, or `4 trace files in ddp/`: names, never full paths."""
    count = len(report.paths)
    if not count:
        return "no trace files"
    first = PurePath(report.paths[0])
    folder = f"{first.parent.name}/" if first.parent.name else ""
    if count == 1:
        return folder + first.name
    return f"{count} trace files in {folder or './'}"


def step_history(report: Report) -> tuple[Point, ...]:
    """Offline, one point per step: its rate and how its time splits."""
    steps = report.job.steps
    if not steps:
        return ()
    origin = steps[0].start_us
    return tuple(
        Point(
            elapsed_s=(s.start_us - origin) / 1e6,
            steps_per_s=1e6 / s.duration_us if s.duration_us > 0 else None,
            shares=step_shares(s.parts_us, s.duration_us),
        )
        for s in steps
    )


def step_shares(parts_us: Mapping[str, float], duration_us: float) -> dict[str, float]:
    total = duration_us if duration_us > 0 else sum(parts_us.values())
    return {k: v / total for k, v in parts_us.items()} if total > 0 else {}
