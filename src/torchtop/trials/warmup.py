"""Where a measured run's warm-up ends: after the batches its DataLoader queued, once steady.

A fixed count of warm-up steps does not know the input pipeline. A DataLoader with workers
queues `num_workers * prefetch_factor` batches as soon as it starts: the loop eats those at
compute speed whatever the workers' real rate, so a fix to the pipeline (more workers, a longer
prefetch) looks better in its first steps than it is in a long run, and a trial that measures
them claims too much. So the warm-up lasts at least those queued batches (read from the run's
agent `settings` record; none without workers), and at least `Span.warmup_steps` (imports,
allocator, first compiles), and then until step times are stationary: the median of the last
`settle_steps` steps within `settle_tolerance` of the median of the `settle_steps` before them,
both windows after the queued batches. Medians, because one slow step (a collection pause,
another process taking the core) must not keep a run warming up. A job that never settles (a
pipeline delivering in bursts longer than the windows) stops warming up at a cap in steps and in
seconds (`Span.max_warmup_steps`, `Span.max_warmup_s`), after its queued batches. The rule is
a pure function of the step times so far: the warm-up it finds for a run does not change as
more steps arrive, so the live wait and the final measurement agree.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from torchtop.model.trials import Span, Warmup
from torchtop.runs.records import Settings

DEFAULT_PREFETCH_FACTOR = 2
"""PyTorch's own default for a DataLoader with workers."""


def queued_batches(settings: Settings | None) -> int:
    """The batches the DataLoader queues at start, from the agent's `settings` record."""
    loader = settings.dataloader if settings is not None else None
    if loader is None:
        return 0
    workers, prefetch = loader.num_workers, loader.prefetch_factor
    if workers is None or workers <= 0:
        return 0
    if prefetch is None or prefetch <= 0:
        prefetch = DEFAULT_PREFETCH_FACTOR
    return workers * prefetch


def end_of_warmup(walls_s: Sequence[float], queued: int, span: Span) -> Warmup | None:
    """The warm-up of a run whose timed steps so far took `walls_s`; None until it has ended.

    Warm-up `end` (the number of steps left out) is the first that is past both floors and
    either follows two stationary windows or reaches a cap."""
    floor = max(span.warmup_steps, queued)
    window = max(span.settle_steps, 1)
    elapsed_s = 0.0
    for end in range(len(walls_s) + 1):
        if end >= floor:
            if end >= queued + 2 * window and _stationary(
                walls_s[end - 2 * window : end], window, span.settle_tolerance
            ):
                return Warmup(end, queued, "stationary", elapsed_s)
            if end >= span.max_warmup_steps:
                return Warmup(end, queued, "step cap", elapsed_s)
            if elapsed_s >= span.max_warmup_s:
                return Warmup(end, queued, "time cap", elapsed_s)
        if end < len(walls_s):
            elapsed_s += walls_s[end]
    return None


def _stationary(walls_s: Sequence[float], window: int, tolerance: float) -> bool:
    earlier = statistics.median(walls_s[:window])
    later = statistics.median(walls_s[window:])
    if earlier <= 0:
        return later <= 0
    return abs(later / earlier - 1.0) <= tolerance
