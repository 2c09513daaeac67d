"""The straggler judgement in words, for the text and Markdown reports' RANKS section.

`assess.stragglers` compares every rank over all the counted steps they share, in blocks; these
lines say what it found with the figures behind it: the straggler's margin (busy time over its
peers', and the share of its step they wait on it) and its persistence (the blocks where it was
the slowest, and since which step), or, for ranks alike, that there is none and by how little the
busiest led. Step numbers are the agent's, always inside the steps counted.
"""

from __future__ import annotations

from collections.abc import Sequence

from torchtop.model.report import RankReport, RankStanding
from torchtop.runs.step_blocks import BLOCK_STEPS


def straggler_words(standing: RankStanding) -> str:
    """`+20% busy time vs its peers, who wait 15% of each step on it; the slowest in 28 of 30
    blocks of 10 steps (steps 2-301), since step 122`."""
    share = standing.culprit_share or 0.0
    blocks = standing.blocks_judged or 0
    words = f"{(standing.slower_by or 0.0):+.0%} busy time vs its peers"
    if standing.waited_share is not None:
        words += f", who wait {standing.waited_share:.0%} of each step on it"
    words += f"; the slowest in {round(share * blocks)} of {blocks} blocks of {BLOCK_STEPS} steps"
    if standing.judged_steps is not None:
        first, last = standing.judged_steps
        words += f" (steps {first}-{last})"
        if standing.since_step is not None and standing.since_step > first:
            words += f", since step {standing.since_step}"
    return words


def no_straggler_line(ranks: Sequence[RankReport]) -> str | None:
    """`no straggler over steps 2-301 (30 blocks of 10): the busiest, rank 1, was the slowest
    in 57% of them, +2% busy time, 0% of its step`; None where one was named or none judged."""
    judged = [r for r in ranks if r.standing is not None and r.standing.blocks_judged]
    if not judged or any(r.standing is not None and r.standing.straggler for r in ranks):
        return None
    top = max(judged, key=lambda r: r.standing.culprit_share or 0.0 if r.standing else 0.0)
    standing = top.standing
    assert standing is not None
    span = ""
    if standing.judged_steps is not None:
        span = f" over steps {standing.judged_steps[0]}-{standing.judged_steps[1]}"
    line = (
        f"no straggler{span} ({standing.blocks_judged} blocks of {BLOCK_STEPS}): the busiest,"
        f" {top.analysis.label}, was the slowest in {(standing.culprit_share or 0.0):.0%} of them"
    )
    if standing.slower_by is not None:
        line += f", {standing.slower_by:+.0%} busy time"
    if standing.waited_share is not None:
        line += f", {standing.waited_share:.0%} of its step"
    return line
