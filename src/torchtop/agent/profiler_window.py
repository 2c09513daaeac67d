"""One profiler window: `torch.profiler` over a few whole steps, saved as a Kineto trace.

The window opens at a step boundary and `step_ended()` is called at each later one, which
calls `prof.step()` so the trace carries `ProfilerStep#N` markers numbered like the agent's
step records; after `steps` steps it stops. `save()` writes
`RUN/traces/<worker>.<epoch_ms>.pt.trace.json.gz`, the way `tensorboard_trace_handler` names
files, so `torchtop analyze` and the live view read it like any other trace. The file appears
complete or not at all: it is written under a name that is not a trace name, then renamed.

Shapes are recorded (`record_shapes`), so each operator's FLOPs and bytes, and the job's MFU,
can be counted from the trace; `benchmarks/agent_overhead.py` measures what that adds to a window.

The always-RECORD schedule is there only because `torch.profiler.profile` records step
markers only when given a schedule; it never changes what is recorded. Every call into the
profiler goes through `ProfilerOutput`, so what Kineto prints lands in the run folder's
`logs/profiler-<pid>.log`, not in the job's stderr; its warnings and errors are in `problems`.
"""

from __future__ import annotations

import gzip
import os
import shutil
from pathlib import Path
from typing import Any

import torch
from torch.profiler import ProfilerAction, ProfilerActivity, profile

from torchtop.agent.profiler_output import ProfilerOutput
from torchtop.agent.settings import cuda_initialized
from torchtop.runs.layout import RunLayout

GZIP_LEVEL = 6


def _always_record(step: int) -> ProfilerAction:
    return ProfilerAction.RECORD


def job_profiler_active() -> bool:
    """Whether some profiler (the job's own, most likely) is recording right now."""
    import torch.autograd.profiler as autograd_profiler

    if getattr(autograd_profiler, "_is_profiler_enabled", False):
        return True
    enabled = getattr(torch._C._autograd, "_profiler_enabled", None)
    return bool(enabled()) if callable(enabled) else False


def profiler_activities() -> list[ProfilerActivity]:
    """CPU, plus CUDA when the job has initialised it (asking would initialise it)."""
    if cuda_initialized():
        return [ProfilerActivity.CPU, ProfilerActivity.CUDA]
    return [ProfilerActivity.CPU]


class ProfilerWindow:
    def __init__(
        self, traces_dir: Path, worker: str, first_step: int, steps: int, shapes: bool = True
    ) -> None:
        self.traces_dir = traces_dir
        self.shapes = shapes
        """Record operators' input shapes and types (the report's FLOPs and MFU need them)."""
        self.worker = worker
        self.first_step = first_step
        self.steps = steps
        self.steps_done = 0
        self.stopped = False
        self._profiler: Any = None
        self.output = ProfilerOutput(RunLayout(traces_dir.parent).profiler_log(os.getpid()))

    @property
    def problems(self) -> list[str]:
        """The profiler's warnings and errors since last asked (each given once)."""
        return self.output.take_problems()

    @property
    def last_step(self) -> int:
        return self.first_step + self.steps_done - 1

    def open(self) -> None:
        prof = profile(
            activities=profiler_activities(),
            schedule=_always_record,
            record_shapes=self.shapes,
            with_stack=False,
        )
        prof.step_num = self.first_step
        self.output.call(prof.start)
        self._profiler = prof

    def step_ended(self) -> bool:
        """Count a finished step; True once the window has all its steps and has stopped."""
        self.steps_done += 1
        if self.steps_done >= self.steps:
            self._stop()
            return True
        self.output.call(self._profiler.step)
        return False

    def discard(self) -> None:
        self._stop()
        self._profiler = None

    def save(self, epoch_ms: int) -> Path:
        """Write the trace; returns its final path."""
        self.traces_dir.mkdir(parents=True, exist_ok=True)
        name = f"{self.worker}.{epoch_ms}.pt.trace.json.gz"
        final = self.traces_dir / name
        raw = self.traces_dir / f".{name}.json-partial"
        packed = self.traces_dir / f".{name}.partial"
        try:
            self.output.call(lambda: self._profiler.export_chrome_trace(str(raw)))
            with raw.open("rb") as source, gzip.open(packed, "wb", GZIP_LEVEL) as target:
                shutil.copyfileobj(source, target, 1 << 20)
            os.replace(packed, final)
        finally:
            for leftover in (raw, packed):
                leftover.unlink(missing_ok=True)
            self._profiler = None
        return final

    def _stop(self) -> None:
        if self._profiler is not None and not self.stopped:
            self.stopped = True
            self.output.call(self._profiler.stop)
