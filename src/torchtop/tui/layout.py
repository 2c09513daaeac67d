"""How the dashboard's rows share the terminal's height, and which give way when they cannot.

The fix list (the middle row) holds the focus and the keys that act, so it always keeps a few
rows. The other sections (the verdict row above it, the row of lists below it, the trial and
the job's ending) each want some rows and can live with fewer; when even their fewest do not
fit, the least needed is folded to one line that names it, rather than drawn as a box cut in
half. Which gives way first is a ranking (the row of lists first, the verdict last); the
section the user asked to see (`f`) is ranked above all the others. Pure: numbers in, numbers
out, so the choices can be tested without a terminal.
"""

from __future__ import annotations

from dataclasses import dataclass

FOLDED = 1
"""A folded section's height: its one line (`widgets.folded.FoldedLine`)."""
MIDDLE_LEAST = 4
"""The fix list's fewest rows: its borders and the first fix's severity and change."""
OPENED_KEEP = 100
"""The rank of the section the user unfolded: above every other."""


@dataclass(frozen=True)
class Want:
    """A section's rows: at most `most`, at least `least` (whole, if fewer than it needs),
    and `keep`, its rank: the lowest folds first and grows last."""

    name: str
    most: int
    least: int
    keep: int


def fit(room: int, wants: list[Want], opened: str | None = None) -> dict[str, int]:
    """Each section's height in `room` rows (the fix list's `MIDDLE_LEAST` not counted in),
    `FOLDED` for a section folded to its line. Sections fold, lowest rank first, only until
    the rest fit at their fewest rows; the rows left over then go to the highest ranked."""
    ranked = sorted(wants, key=lambda w: OPENED_KEEP if w.name == opened else w.keep)
    heights = {w.name: w.least for w in ranked}
    for want in ranked:
        if sum(heights.values()) <= room:
            break
        if want.least > FOLDED:  # a section that can do without rows has none to give
            heights[want.name] = FOLDED
    spare = room - sum(heights.values())
    for want in reversed(ranked):
        if heights[want.name] == FOLDED and want.least > FOLDED:
            continue
        grown = min(want.most, heights[want.name] + max(spare, 0))
        spare -= grown - heights[want.name]
        heights[want.name] = grown
    return heights


def folded(heights: dict[str, int], wants: list[Want]) -> list[str]:
    """The sections `fit` folded, in the order of `wants` (the screen's)."""
    return [w.name for w in wants if heights[w.name] == FOLDED and w.least > FOLDED]
