"""How long each native chunk of one process runs and how often it samples: a fast start, then
a pace that keeps the sampler's own CPU under a budget.

py-spy cannot stream: `py-spy record` writes its profile only when it ends, and every run loads
the job's native symbols again (libtorch's: about 1 CPU-s on a quiet 2-core machine, the bulk
of what a 4 s chunk costs). So the sampler is one `py-spy record` per chunk, and what a chunk
costs is a fixed part (the symbols) plus a part per sample (each stops the job's threads while
they are unwound). The first chunks are short, so the first verdict comes within 10 s; each
finished chunk's own CPU (the child's rusage) refits `cpu_s = fixed_s + per_sample_s * samples`
over the last few chunks, and the next chunk is as long as that fit needs to stay under
`budget_share` of one core (at most double the last one, at most `MAX_CHUNK_S`), sampling less
often where the samples alone would spend the budget.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field

FIRST_CHUNKS_S = (4, 4)
"""The fast start: two chunks of 4 s at `RATE_PER_S` are 32 looks, a verdict's worth twice."""
RATE_PER_S = 4
MIN_RATE_PER_S = 1
MAX_CHUNK_S = 120
"""A verdict drawn from chunks no older than a few minutes."""
BUDGET_SHARE = 0.01
"""The sampler's own CPU, as a share of one core, that the pace aims under."""
HISTORY = 6


@dataclass(frozen=True)
class Spent:
    """One finished chunk: how long it ran, how many samples it asked for, its own CPU."""

    chunk_s: int
    rate_per_s: int
    cpu_s: float

    @property
    def samples(self) -> int:
        return self.chunk_s * self.rate_per_s


@dataclass
class Pace:
    """The chunks of one process: what the next one is, from what the last ones cost."""

    budget_share: float = BUDGET_SHARE
    spent: deque[Spent] = field(default_factory=lambda: deque(maxlen=HISTORY))
    started: int = 0

    def next_chunk(self) -> tuple[int, int]:
        """The next chunk's length (s) and rate (samples/s)."""
        self.started += 1
        if self.started <= len(FIRST_CHUNKS_S) or not self.spent:
            return FIRST_CHUNKS_S[min(self.started, len(FIRST_CHUNKS_S)) - 1], RATE_PER_S
        fixed_s, per_sample_s = self.fit()
        rate = RATE_PER_S
        if per_sample_s * rate > self.budget_share / 2:  # the samples alone spend the budget
            rate = max(MIN_RATE_PER_S, math.floor(self.budget_share / (2 * per_sample_s)))
        room_share = self.budget_share - per_sample_s * rate
        needed_s = fixed_s / room_share if room_share > 0 else float(MAX_CHUNK_S)
        longest_s = 2 * self.spent[-1].chunk_s
        chunk_s = int(min(max(math.ceil(needed_s), FIRST_CHUNKS_S[0]), longest_s, MAX_CHUNK_S))
        return chunk_s, rate

    def record(self, chunk_s: int, rate_per_s: int, cpu_s: float) -> None:
        self.spent.append(Spent(chunk_s, rate_per_s, cpu_s))

    def fit(self) -> tuple[float, float]:
        """`fixed_s` a chunk and `per_sample_s`, by least squares over the recent chunks (all
        fixed while their sample counts do not differ)."""
        points = list(self.spent)
        mean_n = sum(p.samples for p in points) / len(points)
        mean_c = sum(p.cpu_s for p in points) / len(points)
        var_n = sum((p.samples - mean_n) ** 2 for p in points)
        if var_n == 0:
            return mean_c, 0.0
        slope = sum((p.samples - mean_n) * (p.cpu_s - mean_c) for p in points) / var_n
        per_sample_s = max(slope, 0.0)
        return max(mean_c - per_sample_s * mean_n, 0.0), per_sample_s

    def share(self) -> float | None:
        """The newest chunk's own CPU as a share of one core over its length."""
        if not self.spent:
            return None
        last = self.spent[-1]
        return last.cpu_s / last.chunk_s
