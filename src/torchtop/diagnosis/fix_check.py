"""A rule's fix checked against the knob catalogue as the rule loads.

The knob must be in the catalogue (`model.knobs`: `dataloader.persistant_workers` is a typo,
not a fix that is never applied), the route one the knob takes (any knob may be shown as
`code`), and the value one the planner can resolve for some job (`model.fix_values`, the
grammar `advice.values` resolves). The catalogue is imported only when a tree is built, so a
cached tree costs `analyze` nothing here.
"""

from __future__ import annotations

from torchtop.diagnosis.schema import FixEntry, did_you_mean


def fix_problem(fix: FixEntry) -> str | None:
    """`key: what is wrong` for the first problem of `fix`, or None."""
    from torchtop.model.fix_values import value_problem
    from torchtop.model.knobs import CATALOGUE, ROUTES, find_knob

    knob = find_knob(fix.knob)
    if knob is None:
        return f"knob: unknown knob {fix.knob!r}{did_you_mean(fix.knob, CATALOGUE)}"
    if fix.apply not in ROUTES:
        return f"apply: {fix.apply!r} is not one of {', '.join(ROUTES)}"
    if fix.apply != "code" and fix.apply not in knob.routes:
        return (
            f"apply: {fix.knob} is applied by {' or '.join(knob.routes)} (or shown as code),"
            f" not {fix.apply}"
        )
    problem = value_problem(knob, fix.value)
    return None if problem is None else f"value: {problem}"
