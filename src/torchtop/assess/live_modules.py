"""The agent's module timings (`module_times`) as the trace view's tree (`ModuleTree`), and
what the dashboard says of a period in progress. Pure.

The records hold sums over the period's steps by module path; the tree holds ms per step, a
module's children in the order they first finished (a parent finishes after its children, so
the record's order is children first; the tree keeps each level in that order).
"""

from __future__ import annotations

from collections import defaultdict

from torchtop.model.memory import ModuleTime, ModuleTree
from torchtop.runs.records import ModuleTimes, ModuleTiming
from torchtop.runs.state import ProcessState


def live_module_tree(times: ModuleTimes) -> ModuleTree | None:
    """The period's tree (ms per step over its steps); None where no module ran."""
    if not times.modules or times.steps <= 0:
        return None
    by_path = {m.path: m for m in times.modules}
    kids_of: dict[str, list[str]] = defaultdict(list)
    for path in by_path:
        above = path.rsplit("/", 1)[0] if "/" in path else ""
        # A module whose forward raised every time never finished: its children are roots.
        kids_of[above if above in by_path else ""].append(path)
    roots = tuple(_node(p, by_path, kids_of, times.steps) for p in kids_of[""])
    return ModuleTree(
        steps=times.steps,
        roots=roots,
        source="agent",
        first_step=times.first_step,
        device=times.device,
    )


def _node(
    path: str, by_path: dict[str, ModuleTiming], kids_of: dict[str, list[str]], steps: int
) -> ModuleTime:
    timing = by_path[path]
    return ModuleTime(
        name=path.rsplit("/", 1)[-1],
        calls=timing.calls,
        forward_ms=timing.forward_s * 1000 / steps,
        forward_self_ms=timing.forward_self_s * 1000 / steps,
        backward_ms=None,
        backward_self_ms=None,
        children=tuple(_node(p, by_path, kids_of, steps) for p in kids_of.get(path, ())),
    )


def modules_progress(processes: list[ProcessState]) -> str | None:
    """`timing modules: 12/20 steps` while a period runs (the least advanced rank's count),
    else None."""
    counts: list[tuple[int, int]] = []
    for process in processes:
        started, done = process.modules_started, process.module_times
        if started is None or (done is not None and done.first_step >= started.first_step):
            continue
        newest = process.steps[-1].step if process.steps else started.first_step - 1
        counts.append((min(max(newest + 1 - started.first_step, 0), started.steps), started.steps))
    if not counts:
        return None
    timed, steps = min(counts)
    return f"timing modules: {timed}/{steps} steps"
