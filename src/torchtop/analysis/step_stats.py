"""The statistics of a run of step durations: count, summed time, mean, p50, p95 and spread.

One function for every source of steps: a trace's steps (`analysis.summary`), and a recorded or
live run's step walls, whole period and recent steps (`assess.run`). Callers keep which of the
figures they publish; the figures themselves are computed here only, so a trace and a run
describe the same durations with the same numbers. Percentiles are numpy's linear
interpolation (`vocabulary.percentiles`, exact to the last bit, one partition for both).
"""

from __future__ import annotations

import msgspec
import numpy as np
import numpy.typing as npt

from torchtop.analysis.vocabulary import percentiles


class StepStats(msgspec.Struct, frozen=True):
    """Figures of `count` step durations; None where they are not measured (no step, or for
    `cv` fewer than two steps or a zero mean)."""

    count: int
    total_ms: float
    mean_ms: float | None
    p50_ms: float | None
    p95_ms: float | None
    cv: float | None

    @property
    def per_s(self) -> float | None:
        """Steps over the time they took (not the inverse of a mean of rates)."""
        return self.count / (self.total_ms / 1000) if self.total_ms > 0 else None


def step_stats(durations_ms: npt.NDArray[np.float64]) -> StepStats:
    """The statistics of `durations_ms`, in any order."""
    count = len(durations_ms)
    if not count:
        return StepStats(0, 0.0, None, None, None, None)
    total_ms = float(durations_ms.sum())
    mean_ms = total_ms / count
    p50_ms, p95_ms = percentiles(durations_ms, (50, 95))
    return StepStats(
        count=count,
        total_ms=total_ms,
        mean_ms=mean_ms,
        p50_ms=p50_ms,
        p95_ms=p95_ms,
        cv=float(durations_ms.std() / mean_ms) if count > 1 and mean_ms > 0 else None,
    )
