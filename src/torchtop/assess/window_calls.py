"""What each profiler window alone says, beside the verdict pooled from all of them.

The run's verdict pools every window (`assess.windows`); a window whose own verdict differs is
shown as such (the report's `windows`, its text, the dashboard's verdict panel), so a burst
one window caught is visible without deciding the run. Each window is diagnosed once: the
caller's `memo` keeps its class by the analysis's identity (the window cache holds every
analysis for the run's life, so an identity is never reused while the memo lives).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, MutableMapping, Sequence

from torchtop.model.analysis import RankAnalysis
from torchtop.model.report import WindowCall
from torchtop.runs.state import ProcessState

Classify = Callable[[ProcessState, RankAnalysis], str]
"""A process and one of its windows -> the class that window alone names."""


def window_calls(
    processes: Sequence[ProcessState],
    each_window: Mapping[int, Sequence[RankAnalysis]],
    verdict: str,
    classify: Classify,
    memo: MutableMapping[int, str],
) -> tuple[WindowCall, ...]:
    """Each process's windows, oldest first, with their own class and whether it is the run's
    (None while the run's verdict is unknown)."""
    calls: list[WindowCall] = []
    for process in processes:
        for window in each_window.get(process.pid, ()):
            key = id(window)
            if key not in memo:
                memo[key] = classify(process, window)
            own = memo[key]
            numbers = [s.number for s in window.steps]
            calls.append(
                WindowCall(
                    rank=process.rank,
                    first_step=min(numbers) if numbers else None,
                    last_step=max(numbers) if numbers else None,
                    bottleneck=own,
                    agrees=None if verdict == "unknown" else own == verdict,
                )
            )
    return tuple(calls)
