"""The straggler among a job's ranks, judged over every counted step they share.

Per block of ten step numbers (`runs.step_blocks`), each rank's median busy time (its wall less
its time in `backward()`, where DDP waits for the others; the plain wall where ranks do not
synchronise) says which rank the others waited on: the busiest. A rank is a straggler when,
from some block on to the newest (its stretch: all of them, unless it began later):

- it is the busiest in at least `culprit_share` of the blocks, and ranks alike would be so
  often with a chance of at most `max_chance` (each block's busiest drawn at random: a binomial
  tail), so a streak of luck over a few blocks is not a straggler;
- its busy time exceeds its peers' median by `min_slower_by` (the median over the blocks);
- its peers wait at least `min_waited_share` of their step on it: two identical DDP ranks whose
  step is mostly all-reduce may differ by 15% in their sliver of busy time, persistently (which
  core each got), and hold no one back.

Judging blocks rather than the newest steps or a profiled few is what made identical runs agree:
three 2-rank DDP runs of 300 steps named rank 1 (+18%), no rank, and no rank from their newest
50 steps; over all their blocks none passes. Pure: the processes' blocks in, standings out.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import msgspec
import numpy as np

from torchtop.diagnosis.schema import RankPolicy
from torchtop.model.report import RankStanding
from torchtop.runs.state import ProcessState
from torchtop.runs.step_blocks import BLOCK_STEPS, first_step_of

FULL_BLOCK = BLOCK_STEPS // 2
"""A block is compared once every judged rank has at least this many of its steps."""


def block_stragglers(
    processes: Sequence[ProcessState], judged: Sequence[int], policy: RankPolicy
) -> dict[int, RankStanding]:
    """The standings of the processes at the positions `judged` (keyed by position): every
    one gets its share of blocks as the busiest; a straggler, its margin and persistence."""
    blocks = [processes[i].blocks for i in judged]
    size = min((b.size for b in blocks), default=0)
    if len(blocks) < 2 or not size:
        return {}
    counts = np.stack([b.count[:size] for b in blocks])
    shared = np.flatnonzero((counts >= FULL_BLOCK).all(axis=0))
    if int(counts[:, shared].min(axis=0).sum()) < policy.min_steps:
        return {}
    seen = counts[:, shared].astype(np.float64)
    busy = np.stack([b.median_busy_s(size) for b in blocks])[:, shared]
    wall = np.stack([b.wall_s[:size] for b in blocks])[:, shared] / seen
    first_t = np.stack([b.first_t[:size] for b in blocks])[:, shared]
    first_steps = [first_step_of(int(block)) for block in shared]
    # The last step every rank has: the newest block may be partly done.
    last_step = first_steps[-1] + int(counts[:, shared[-1]].min()) - 1
    result = judge_blocks(busy, wall, policy, first_steps, last_step, first_t)
    return {judged[i]: standing for i, standing in result.items()}


def judge_blocks(
    busy: np.ndarray,
    wall: np.ndarray,
    policy: RankPolicy,
    first_steps: Sequence[int],
    last_step: int,
    first_t: np.ndarray | None = None,
) -> dict[int, RankStanding]:
    """`busy` and `wall` (s): a row per rank, a column per block, oldest first; each block's
    first step number and the last step judged; `first_t`, each block's first step's end
    time per rank (for `since_t`). Keyed by row."""
    ranks, judged = busy.shape
    busiest = busy.argmax(axis=0)
    counts = np.bincount(busiest, minlength=ranks)
    result = {
        i: RankStanding(
            culprit_share=round(float(counts[i]) / judged, 4),
            blocks_judged=judged,
            judged_steps=(first_steps[0], last_step),
        )
        for i in range(ranks)
    }
    top = int(counts.argmax())
    start = _stretch_start(busiest, top, policy)
    stretch = slice(start, None)
    times = int((busiest[stretch] == top).sum())
    blocks = judged - start
    peers = np.median(np.delete(busy, top, axis=0)[:, stretch], axis=0)
    own = busy[top, stretch]
    with np.errstate(divide="ignore", invalid="ignore"):
        slower_by = _median_finite(own / peers - 1.0)
        waited_share = _median_finite((own - peers) / wall[top, stretch])
    chance = binomial_tail(times, blocks, 1.0 / ranks)
    persistent = (
        blocks * BLOCK_STEPS >= policy.min_steps
        and times / blocks >= policy.culprit_share
        and chance <= policy.max_chance
    )
    large = (
        slower_by is not None
        and slower_by >= policy.min_slower_by
        and waited_share is not None
        and waited_share >= policy.min_waited_share
    )
    # The busiest rank's margin and persistence are given straggler or not: "no straggler"
    # says by how little.
    result[top] = _replace(
        result[top],
        straggler=persistent and large,
        slower_by=None if slower_by is None else round(slower_by, 4),
        waited_share=None if waited_share is None else round(waited_share, 4),
        chance=float(f"{chance:.3g}"),
        since_step=first_steps[start] if persistent and large else None,
        since_t=None
        if first_t is None or not (persistent and large)
        else _time(first_t[top, start]),
    )
    return result


def _replace(standing: RankStanding, **changes: object) -> RankStanding:
    return msgspec.structs.replace(standing, **changes)


def _time(t: float) -> float | None:
    return None if math.isnan(t) else float(t)


def _stretch_start(busiest: np.ndarray, top: int, policy: RankPolicy) -> int:
    """The first block of `top`'s current stretch as the busiest: going back from the newest,
    chunk by chunk (`min_steps` worth of blocks), while it was the busiest in `culprit_share`
    of a chunk's blocks; the first block of those chunks where it was the busiest."""
    chunk = max(policy.min_steps // BLOCK_STEPS, 1)
    start = len(busiest)
    while start > 0:
        part = busiest[max(start - chunk, 0) : start]
        if (part == top).mean() < policy.culprit_share:
            break
        start = max(start - chunk, 0)
    if start == len(busiest):
        return 0  # never the busiest over a whole chunk: judged (and rejected) over them all
    hits = np.flatnonzero(busiest[start:] == top)
    return start + int(hits[0])


def _median_finite(values: np.ndarray) -> float | None:
    finite = values[np.isfinite(values)]
    return float(np.median(finite)) if len(finite) else None


def binomial_tail(times: int, trials: int, p: float) -> float:
    """P(X >= times) for X ~ Binomial(trials, p), summed in log space (trials in thousands)."""
    if times <= 0:
        return 1.0
    log_p, log_q = math.log(p), math.log1p(-p)
    terms = [
        math.lgamma(trials + 1)
        - math.lgamma(k + 1)
        - math.lgamma(trials - k + 1)
        + k * log_p
        + (trials - k) * log_q
        for k in range(times, trials + 1)
    ]
    peak = max(terms)
    return min(1.0, math.exp(peak) * sum(math.exp(t - peak) for t in terms))
