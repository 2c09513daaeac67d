"""`--tensorboard [DIR]`: each tick of the live view written as TensorBoard event files.

`TensorBoardLog.publish` is a tick observer, like `--metrics`' collector: it reads the tick's
`Snapshot` and appends what is new since the last tick, flushed, so a TensorBoard open beside
the job follows it. TensorBoard calls each folder holding event files a run, so DIR holds:

- `rank<N>/` per rank (a job of one process is `rank0`): every step's wall time and DataLoader
  wait as the agent recorded them (`step/wall_ms`, `step/dataloader_wait_ms`), and each tick the
  report's figures for the rank (`steps_per_s`, `breakdown/<category>`, `dataloader_wait_share`,
  and `efficiency/mfu` once a profiler window with shapes and a peak gives one);
- `job/`: the verdict shown and each change of it (text `verdict`, scalar `verdict/confidence`),
  each GPU's utilization, memory and power where NVML gave them (`gpu<i>/...`), and each
  trial's before and after (`trial/*` at step = the trial's number, and a text `trial`), read
  from `RUN/trials/NN.json` as the trial code writes them;
- `profiler/`: the profiler windows, linked under the names `tensorboard_trace_handler` gives
  them (`<worker>.<span>.pt.trace.json.gz`), where torch-tb-profiler lists them as the run
  `profiler`, its workers and spans.

The x axis is the training step. A relaunched job (a trial) counts its steps from 0 again; its
points go on after the last one written (`StepAxis`), so each curve only moves forward.
Not measured is not written: a GPU without a power reading has no power curve, never zeros.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from torchtop.assess.restarts import newest_of_one_rank
from torchtop.assess.snapshot import Snapshot
from torchtop.exporters.tb_events import EventFile, scalar_value, text_value
from torchtop.model.analysis import RankAnalysis
from torchtop.model.findings import Verdict
from torchtop.model.report import Report
from torchtop.report.contract import BREAKDOWN_KEYS, steps_per_s
from torchtop.runs.layout import RunLayout
from torchtop.runs.records import GpuDevice
from torchtop.runs.state import ProcessState

JOB_RUN = "job"
PROFILER_RUN = "profiler"
DEFAULT_FOLDER = "tensorboard"
"""The bare flag's place: `RUN/tensorboard/`."""

GPU_TAGS: dict[str, Callable[[GpuDevice], float | None]] = {
    "utilization_pct": lambda d: d.utilization_gpu_pct,
    "memory_used_bytes": lambda d: d.memory_used_bytes,
    "memory_total_bytes": lambda d: d.memory_total_bytes,
    "power_w": lambda d: d.power_w,
}


@dataclass
class StepAxis:
    """A TensorBoard run's x axis: the training step, never going back."""

    base: int = 0
    last: int = -1

    def at(self, step: int) -> int:
        if self.base + step <= self.last:
            self.base = self.last + 1 - step  # a relaunch started again from step 0
        self.last = max(self.last, self.base + step)
        return self.base + step


@dataclass
class _RankRun:
    events: EventFile
    axis: StepAxis = field(default_factory=StepAxis)
    pid: int | None = None
    last_step: int | None = None
    """The newest step number of `pid` written."""


class TensorBoardLog:
    """The event files of one launcher's run; `publish` each tick, `close` at the end."""

    def __init__(self, folder: Path, run_root: Path, clock: Callable[[], float] = time.time):
        self.folder, self.run_root, self.clock = folder, run_root, clock
        self.ranks: dict[str, _RankRun] = {}
        self.job = EventFile(folder / JOB_RUN)
        self.job_axis = 0
        self.shown: str | None = None
        """The bottleneck last written as text: a new text when it changes."""
        self.verdict_axis: int | None = None
        self.gpu_t: float | None = None
        self.trials: set[str] = set()
        self.windows: set[Path] = set()
        self.failures = 0
        """Ticks that could not be written (a full disk): the job goes on regardless."""

    def publish(self, snapshot: Snapshot) -> None:
        """Called by the tick thread: it must never raise into the live view."""
        try:
            self._write(snapshot)
        except Exception:
            self.failures += 1

    def close(self) -> None:
        for run in self.ranks.values():
            run.events.close()
        self.job.close()

    def _write(self, snapshot: Snapshot) -> None:
        now_s = self.clock()
        rows = rank_analyses(snapshot.report, snapshot.state.training_processes)
        for process, analysis in rows:
            self._write_rank(process, analysis, len(rows), now_s)
        self.job_axis = max([0, *(r.axis.last for r in self.ranks.values())])
        self._write_verdict(snapshot, now_s)
        self._write_gpus(snapshot)
        self.write_trials(now_s)
        self._link_windows(snapshot)
        for events in (*(r.events for r in self.ranks.values()), self.job):
            events.flush()

    def _write_rank(
        self, process: ProcessState, analysis: RankAnalysis, count: int, now_s: float
    ) -> None:
        name = rank_run_name(process, count)
        run = self.ranks.setdefault(name, _RankRun(EventFile(self.folder / name)))
        if run.pid != process.pid:
            run.pid, run.last_step = process.pid, None
        newest: int | None = None
        for record in process.steps:
            if run.last_step is not None and record.step <= run.last_step:
                continue
            values = [scalar_value("step/wall_ms", record.wall_s * 1000.0)]
            if record.data_wait_s is not None:
                values.append(scalar_value("step/dataloader_wait_ms", record.data_wait_s * 1e3))
            run.events.write(record.t, run.axis.at(record.step), values)
            newest = record.step
        if newest is None:
            return  # no new step: the figures would be a second point at the same step
        run.last_step = newest
        run.events.write(now_s, run.axis.last, rank_values(analysis))

    def _write_verdict(self, snapshot: Snapshot, now_s: float) -> None:
        shown = snapshot.shown
        values = []
        if self.job_axis != self.verdict_axis:  # one point per step reached, not per tick
            self.verdict_axis = self.job_axis
            values.append(scalar_value("verdict/confidence", shown.confidence))
        # The reason's figures move every tick; a text is for a change of the verdict itself.
        if shown.bottleneck != self.shown:
            self.shown = shown.bottleneck
            text = f"**{shown.bottleneck}** (confidence {shown.confidence:.0%}): {shown.reason}"
            values.append(text_value("verdict", text))
        self.job.write(now_s, self.job_axis, values)

    def _write_gpus(self, snapshot: Snapshot) -> None:
        gpu = snapshot.state.samples.gpu
        if not gpu or gpu[-1].t == self.gpu_t:
            return
        self.gpu_t = gpu[-1].t
        values = [
            scalar_value(f"gpu{device.index}/{tag}", float(reading))
            for device in gpu[-1].devices
            for tag, read in GPU_TAGS.items()
            if (reading := read(device)) is not None
        ]
        self.job.write(gpu[-1].t, self.job_axis, values)

    def write_verdict_text(self, verdict: Verdict, values: list[bytes]) -> None:
        """`tune`'s ending: the verdict on the tuned job, with `values` (its figures)."""
        text = f"**{verdict.bottleneck}** (confidence {verdict.confidence:.0%}): {verdict.reason}"
        self.job.write(self.clock(), self.job_axis, [*values, text_value("verdict", text)])
        self.job.flush()

    def write_trials(self, now_s: float) -> None:
        """Each trial decided since the last call: `RUN/trials/NN.json`, as the trial wrote it."""
        folder = RunLayout(self.run_root).trials_dir
        if not folder.is_dir():
            return
        for path in sorted(folder.glob("*.json")):
            if path.name in self.trials:
                continue
            try:
                entry = json.loads(path.read_text())
            except (OSError, ValueError):
                continue  # being written: read on a later tick
            self.trials.add(path.name)
            self.job.write(now_s, int(entry.get("number", 0)), trial_values(entry))
        self.job.flush()

    def _link_windows(self, snapshot: Snapshot) -> None:
        target = self.folder / PROFILER_RUN
        for path in snapshot.state.windows:
            if path in self.windows:
                continue
            self.windows.add(path)
            target.mkdir(parents=True, exist_ok=True)
            link_or_copy(path, target / path.name)


def rank_analyses(
    report: Report, processes: list[ProcessState]
) -> list[tuple[ProcessState, RankAnalysis]]:
    """Each stepping process with the report's analysis of it: the ranks' own, or the job's
    when one process (or one rank, restarted: its newest process) is the job. (Not
    `exporters.metrics.rank_rows`: that module brings prometheus_client, 34 ms of imports, into
    a launcher that asked for TensorBoard only.)"""
    if report.ranks:
        # A rank restarted under `run` is one row under its newest process (`assess.restarts`),
        # whose label its earlier processes share: the row's pid says which one it is.
        by_pid = {p.pid: p for p in processes}
        by_label = {p.label: p for p in processes}
        rows = []
        for r in report.ranks:
            process = by_pid.get(r.pid) if r.pid is not None else None
            process = process or by_label.get(r.analysis.label)
            if process is not None:
                rows.append((process, r.analysis))
        return rows
    newest = newest_of_one_rank(processes) if processes else None
    return [(newest, report.job)] if newest is not None else []


def rank_run_name(process: ProcessState, count: int) -> str:
    """`rank<N>`; a job of one process without a rank is rank 0; several without: `pid<N>`."""
    if process.rank is not None:
        return f"rank{process.rank}"
    return "rank0" if count == 1 else f"pid{process.pid}"


def rank_values(analysis: RankAnalysis) -> list[bytes]:
    """The report's figures for one rank: the rate, the breakdown's shares, the DataLoader's,
    the MFU."""
    values: list[bytes] = []
    rate = steps_per_s(analysis.metrics)
    if rate is not None:
        values.append(scalar_value("steps_per_s", rate))
    # All zeros is a breakdown nothing measured yet (no step, no window), not a measured one.
    if any(analysis.breakdown.get(c, 0.0) > 0 for c in BREAKDOWN_KEYS):
        for category in BREAKDOWN_KEYS:
            share = analysis.breakdown.get(category, 0.0)
            values.append(scalar_value(f"breakdown/{category}", share))
    wait = analysis.metrics.get("dataloader_share")
    if isinstance(wait, float):
        values.append(scalar_value("dataloader_wait_share", wait))
    mfu = analysis.efficiency.mfu if analysis.efficiency is not None else None
    if mfu is not None:
        values.append(scalar_value("efficiency/mfu", mfu))
    return values


def trial_values(entry: dict[str, object]) -> list[bytes]:
    """A trial's before and after as scalars, and what it tried and decided as text."""
    values: list[bytes] = []
    for key in ("baseline_steps_per_s", "trial_steps_per_s", "speedup"):
        number = entry.get(key)
        if isinstance(number, int | float) and not isinstance(number, bool):
            values.append(scalar_value(f"trial/{key}", float(number)))
    changes = entry.get("changes")
    tried = "; ".join(str(c) for c in changes) if isinstance(changes, list) else "?"
    decided = "kept" if entry.get("kept") else "reverted"
    text = (
        f"trial {entry.get('number')}: {tried}: {entry.get('baseline_steps_per_s')} -> "
        f"{entry.get('trial_steps_per_s')} steps/s, {decided} ({entry.get('reason')})"
    )
    values.append(text_value("trial", text))
    return values


def link_or_copy(source: Path, target: Path) -> None:
    """A hard link costs no space; across file systems, a copy."""
    if target.exists():
        return
    try:
        os.link(source, target)
    except OSError:
        with contextlib.suppress(OSError):
            shutil.copyfile(source, target)
