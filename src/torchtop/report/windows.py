"""The report's words for its profiler windows: how many the verdict pooled, which disagree.

One line, shared by the text and markdown reports, the headless line's notes and the
dashboard's verdict panel, so each surface says the same.
"""

from __future__ import annotations

from collections.abc import Sequence

from torchtop.model.report import WindowCall


def disagreeing(calls: Sequence[WindowCall]) -> list[WindowCall]:
    """The windows whose own class is not the run's."""
    return [c for c in calls if c.agrees is False]


def steps_text(call: WindowCall) -> str:
    """`steps 8001-8004` (or `a window` where its steps are not numbered)."""
    if call.first_step is None:
        return "a window"
    if call.first_step == call.last_step:
        return f"step {call.first_step}"
    return f"steps {call.first_step}-{call.last_step}"


def windows_line(calls: Sequence[WindowCall], verdict: str) -> str | None:
    """One line on the pooled windows, naming each that disagrees; None for fewer than two
    windows that all agree (nothing to say beyond the verdict)."""
    odd = disagreeing(calls)
    if len(calls) < 2 and not odd:
        return None
    line = f"verdict pooled from {len(calls)} profiler window(s)"
    if not odd:
        return line + f", each of which says {verdict}"
    shown = ", ".join(f"{steps_text(c)} said {c.bottleneck}" for c in odd[:3])
    more = f" (+{len(odd) - 3} more)" if len(odd) > 3 else ""
    return line + f"; {len(odd)} disagree{'s' if len(odd) == 1 else ''}: {shown}{more}"
