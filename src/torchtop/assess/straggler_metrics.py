"""The straggler as metrics, for `rules/rank-straggler.toml`: the finding follows the judgement.

Live, the ranks are judged over every counted step they share, in blocks (`assess.stragglers`),
and each rank's `RankStanding` says whether it is the straggler; the rule reads that judgement
(`straggler_named`), so the finding and `ranks[].straggler` cannot disagree: ranks alike whose
mean step times differ by chance name no one, and synchronised DDP ranks, whose step times are
equal because the peers wait, name the one they wait on. Its recoverable share is what its
peers wait on it (`straggler_waited_share`).

Offline, a folder of rank traces has a few profiled steps per rank and no blocks: the spread of
their mean step times (`rank_step_spread`) decides, under the judgement's thresholds where they
apply (`min_slower_by`, `min_waited_share`; no persistence can be judged from a few steps).
"""

from __future__ import annotations

from collections.abc import Sequence
from statistics import median

from torchtop.diagnosis.schema import RankPolicy
from torchtop.model.analysis import Metrics, RankAnalysis
from torchtop.model.report import RankStanding


def judged_metrics(ranks: Sequence[tuple[str, RankStanding | None]]) -> Metrics:
    """`straggler_*` from each rank's label and standing (a live job of several ranks): named
    exactly where a standing says straggler; not named (False) while nothing was judged yet."""
    if len(ranks) < 2:
        return {}
    named = [(label, s) for label, s in ranks if s is not None and s.straggler]
    if not named:
        return {"straggler_named": False}
    label, standing = named[0]
    blocks = standing.blocks_judged or 0
    count = round((standing.culprit_share or 0.0) * blocks)
    first, last = standing.judged_steps or (None, None)
    persistence = f"busy time vs its peers, the slowest in {count} of {blocks} blocks"
    if first is not None:
        persistence += f" over steps {first}-{last}"
        if standing.since_step is not None and standing.since_step > first:
            persistence += f" (since step {standing.since_step})"
    return {
        "straggler_named": True,
        "straggler_rank": label,
        "straggler_slower_by": standing.slower_by,
        "straggler_waited_share": standing.waited_share,
        "straggler_blocks": count,
        "straggler_blocks_judged": blocks,
        "straggler_blocks_share": standing.culprit_share,
        "straggler_first_step": first,
        "straggler_last_step": last,
        "straggler_persistence": persistence,
    }


def profiled_metrics(
    ranks: Sequence[RankAnalysis], spread: float | None, policy: RankPolicy
) -> Metrics:
    """`straggler_*` from the ranks' profiled steps (traces): the rank with the longest mean
    step, named where `spread` (`rank_step_spread`) exceeds `min_slower_by` and its peers would
    wait at least `min_waited_share` of its step (its excess over their median mean step)."""
    timed = [
        (float(m), r) for r in ranks if isinstance(m := r.metrics.get("step_mean_ms"), int | float)
    ]
    if len(timed) < 2 or spread is None:
        return {}
    slowest_ms, slowest = max(timed, key=lambda item: item[0])
    peers_ms = median(m for m, r in timed if r is not slowest)
    if slowest_ms <= 0 or peers_ms <= 0:
        return {}
    waited = (slowest_ms - peers_ms) / slowest_ms
    named = spread > policy.min_slower_by and waited >= policy.min_waited_share
    if not named:
        return {"straggler_named": False}
    steps = min(len(r.steps) for _, r in timed)
    each = f"{steps} profiled step{'s' if steps != 1 else ''}"
    return {
        "straggler_named": True,
        "straggler_rank": slowest.label,
        "straggler_slower_by": round(slowest_ms / peers_ms - 1.0, 4),
        "straggler_waited_share": round(waited, 4),
        "straggler_persistence": f"mean step time vs its peers over {each} per rank "
        f"(mean step times differ by {spread:.0%} across ranks)",
    }
