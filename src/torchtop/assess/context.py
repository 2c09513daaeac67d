"""What an assessment is given of the world outside the run folder, as one value.

The assessment (`assess.run.assess`, `assess.attached`) is a function of the run's state, its
profiler windows, the rules and this `Context`: it reads no file and no variable and probes no
machine, so the same inputs give the same report. The context is read once by the edge that
assesses (the live monitor when it starts, `analyze` when it reads a recorded run, a test
building its own) with `read_context`, the one function here that looks outside.
"""

from __future__ import annotations

import os
import resource
import socket
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from torchtop.advice.machine import Machine, cached_machine
from torchtop.model.peak import Peak

if TYPE_CHECKING:  # read only where a job is seen through its stacks: not imported for a run
    from torchtop.diagnosis.frames import FramePatterns

NO_STEP_HINT_S = 20.0
"""A job that has not ended a step this long after its start gets told why and how to mark
them; 20 s covers importing torch and building a model on a slow machine."""
NO_STEP_HINT_VARIABLE = "TORCHTOP_NO_STEP_HINT_S"


@dataclass(frozen=True)
class Context:
    machine: Machine
    """The machine assessing (cores, preloadable libraries): the fixes' values are for it."""
    hostname: str
    """Its name: a run recorded on another host counts that host's cores, not this one's."""
    frames: FramePatterns | None = None
    """The rules' stack frame patterns (`_frames.toml`), for a job seen through its native
    stacks (`attach`); None where the caller assesses no such job (a run with an agent)."""
    no_step_hint_s: float = NO_STEP_HINT_S
    """How long a job may run without a step before the verdict says how to mark them."""
    cpu_peak: Peak | None = None
    """This machine's measured CPU peak, read by the launcher before the job started (never
    measured while it runs): a CPU-only job's MFU is counted against it; None: no MFU."""
    memory_limits: tuple[tuple[str, int], ...] = ()
    """The host memory limits a job started from here inherits, by name (`cgroup memory.max`,
    `RLIMIT_AS`): the time a growing job has left (`assess.long_run`); physical RAM is the
    run's own host samples'."""


def read_context(environ: Mapping[str, str] = os.environ, frames: bool = False) -> Context:
    """This machine, its name, `$TORCHTOP_NO_STEP_HINT_S` and, with `frames`, the rules' frame
    patterns (read only where a job may be seen through its stacks)."""
    return Context(
        machine=cached_machine(),
        hostname=socket.gethostname(),
        frames=_frame_patterns() if frames else None,
        no_step_hint_s=float(environ.get(NO_STEP_HINT_VARIABLE, NO_STEP_HINT_S)),
        memory_limits=read_memory_limits(),
    )


def read_memory_limits(cgroup_root: Path = Path("/sys/fs/cgroup")) -> tuple[tuple[str, int], ...]:
    """This process's cgroup memory limit and address-space limit, where set: what a job it
    starts inherits."""
    limits: list[tuple[str, int]] = []
    cgroup = _cgroup_limit(cgroup_root)
    if cgroup is not None:
        limits.append(cgroup)
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft != resource.RLIM_INFINITY:
        limits.append(("RLIMIT_AS", soft))
    return tuple(limits)


def _cgroup_limit(root: Path) -> tuple[str, int] | None:
    """The memory limit of this process's own cgroup (`/proc/self/cgroup`: v2's unified
    `memory.max`, v1's memory controller's `memory.limit_in_bytes`); None where unlimited or
    unreadable. v1 writes "unlimited" as a huge number, kept out at 2**60."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) < 3:
            continue
        place = parts[2].lstrip("/")
        if parts[0] == "0" and not parts[1]:
            file = root / place / "memory.max"
        elif "memory" in parts[1].split(","):
            file = root / "memory" / place / "memory.limit_in_bytes"
        else:
            continue
        try:
            text = file.read_text().strip()
        except OSError:
            continue
        if text.isdigit() and int(text) < 2**60:
            return f"cgroup {file.name}", int(text)
    return None


def with_frames(context: Context) -> Context:
    """`context` with the rules' frame patterns, read now where it has none."""
    return context if context.frames is not None else replace(context, frames=_frame_patterns())


def _frame_patterns() -> FramePatterns:
    from torchtop.diagnosis.frames import load_frame_patterns

    return load_frame_patterns()
