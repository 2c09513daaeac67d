"""The planted jobs' own figures, read from their `KIT` lines (jobs/kit_loop.py).

A job prints `KIT step=N t_s=T gpu_ms=G window=W` every few steps. Its rate is read between
its first and last lines, so the first window (CUDA and cuBLAS set-up, a compile) stays out,
and its GPU share is the CUDA-event time of those steps over their wall time.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

LINE = re.compile(
    r"^KIT step=(?P<step>\d+) t_s=(?P<t>[0-9.]+) gpu_ms=(?P<gpu>[0-9.]+|None) window=(?P<w>\d+)"
)


@dataclass(frozen=True)
class KitLine:
    step: int
    t_s: float
    gpu_ms: float | None
    window: int


@dataclass(frozen=True)
class JobFigures:
    """What a job says of itself between its first and its last KIT line."""

    lines: int
    first_step: int
    last_step: int
    steps: int
    duration_s: float
    steps_per_s: float | None
    gpu_share: float | None
    """CUDA-event time of the steps over their wall time (None on the CPU)."""
    marks: tuple[tuple[int, float], ...] = ()
    """Every line's (step, t_s): the job's clock at those steps."""


def parse_lines(text: str | Iterable[str]) -> list[KitLine]:
    """Every KIT line of a job's output, in order; other lines are skipped."""
    rows = text.splitlines() if isinstance(text, str) else text
    found = []
    for row in rows:
        match = LINE.match(row.strip())
        if match is not None:
            gpu = None if match["gpu"] == "None" else float(match["gpu"])
            found.append(KitLine(int(match["step"]), float(match["t"]), gpu, int(match["w"])))
    return found


def figures(lines: list[KitLine]) -> JobFigures | None:
    """The rate and GPU share between the first and last line; None under two lines."""
    if len(lines) < 2:
        return None
    first, last = lines[0], lines[-1]
    steps, duration_s = last.step - first.step, last.t_s - first.t_s
    rate = steps / duration_s if duration_s > 0 else None
    gpu = [line.gpu_ms for line in lines[1:]]
    share = None
    if duration_s > 0 and all(g is not None for g in gpu):
        share = sum(g for g in gpu if g is not None) / (duration_s * 1000.0)
    marks = tuple((line.step, line.t_s) for line in lines)
    return JobFigures(len(lines), first.step, last.step, steps, duration_s, rate, share, marks)
