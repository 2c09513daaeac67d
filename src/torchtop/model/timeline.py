"""The whole run in buckets of time: steps/s, memory and stalls, for the report's `timeline`,
the dashboard and `view` (CONTRACT.md, "Additions for the long run")."""

from __future__ import annotations

import msgspec


class TimelineBucket(msgspec.Struct, frozen=True):
    """One span of the run; figures not measured in it are None."""

    start_s: float
    """Seconds from the run's first counted step's start."""
    end_s: float
    steps: int
    """Steps that ended in it."""
    steps_per_s: float | None
    """Those steps over their summed wall time."""
    rss_bytes: float | None = None
    """The highest resident set measured at a step end in it."""
    cuda_allocated_bytes: float | None = None
    cuda_reserved_bytes: float | None = None
    stalls: int = 0
    """Periodic stalls (`analysis.stalls`) that ended in it."""


class Timeline(msgspec.Struct, frozen=True):
    """The first training process's run (rank 0, or the only one), oldest bucket first."""

    started_at: float
    """Unix time of the first counted step's start."""
    bucket_s: float
    buckets: tuple[TimelineBucket, ...]
