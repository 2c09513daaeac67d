"""Time per `nn.Module`, forward and backward, self and total, as a tree.

Forward: the `python_function` events named `nn.Module: Name_N` (`with_modules=True` or
`with_stack=True`); a module's parent is the nearest module among its Python callers, and a
module is known by its path from the root (`Sequential_0/Linear_1`), as torch-tb-profiler's
module view knows it by name and id under its parent. Its self time is its time minus its
child modules'.

Backward, which torch-tb-profiler's module view leaves out: each autograd node the engine runs
(`autograd::engine::evaluate_function: AddmmBackward0`) carries the `Sequence number` of the
forward operator that made it; that operator's innermost enclosing module owns the node's time
(its own time is the module's backward self time, its children's add up to the total).
Nodes nested in another (a checkpointed block's recomputation) count once, in the outer one.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from torchtop.analysis.nesting import top_level
from torchtop.analysis.phases import is_backward
from torchtop.analysis.steps import StepWindows
from torchtop.analysis.vocabulary import codes_where, mask_names
from torchtop.model.analysis import PythonCalls
from torchtop.model.memory import ModuleTime, ModuleTree
from torchtop.traces.data import NO_ID, Floats, Ints, TraceData

MODULE_PREFIX = "nn.Module: "


class _Calls:
    """The module calls of one trace: their times, paths and innermost-parent links."""

    def __init__(self, calls: PythonCalls, chosen: Ints) -> None:
        self.start = calls.start_us[chosen]
        self.end = self.start + calls.dur_us[chosen]
        self.thread = calls.thread[chosen]
        self.parent = _module_parents(calls, chosen)
        names = [calls.names[c][len(MODULE_PREFIX) :] for c in calls.name[chosen].tolist()]
        self.path = _paths(names, self.parent, self.start)


def module_tree(trace: TraceData, steps: StepWindows) -> ModuleTree | None:
    """The modules' tree over the steps' span; None where the trace has no module calls."""
    calls = trace.python
    if calls is None or len(calls.start_us) != len(calls.name):
        return None
    is_module = np.isin(calls.name, codes_where(calls.names, _is_module_name))
    lo, hi = _span(steps)
    chosen = np.flatnonzero(is_module & (calls.start_us >= lo) & (calls.start_us < hi))
    if len(chosen) == 0:
        return None
    found = _Calls(calls, chosen)
    forward: dict[str, list[float]] = defaultdict(lambda: [0, 0.0, 0.0])
    for i, path in enumerate(found.path):
        duration = float(found.end[i] - found.start[i])
        forward[path][0] += 1
        forward[path][1] += duration
        forward[path][2] += duration
        if found.parent[i] >= 0:
            forward[found.path[found.parent[i]]][2] -= duration
    backward = _backward_self(trace, found, lo, hi)
    count = max(len(steps), 1)
    kids_of: dict[str, list[str]] = defaultdict(list)
    for i in np.argsort(found.start, kind="stable").tolist():
        path = found.path[i]
        above = path.rsplit("/", 1)[0] if "/" in path else ""
        if path not in kids_of[above]:
            kids_of[above].append(path)
    return ModuleTree(
        steps=count,
        roots=tuple(_node(p, forward, backward, kids_of, count) for p in kids_of[""]),
    )


def _is_module_name(name: str) -> bool:
    return name.startswith(MODULE_PREFIX)


def _span(steps: StepWindows) -> tuple[float, float]:
    if len(steps) == 0 or not steps.has_markers:
        return -np.inf, np.inf
    return float(steps.start_us.min()), float(steps.end_us.max())


def _module_parents(calls: PythonCalls, chosen: Ints) -> Ints:
    """For each chosen module call, the index (into `chosen`) of the nearest module among its
    Python callers, or -1: the parent links are followed for all calls at once."""
    order = np.argsort(calls.ident, kind="stable")
    known = calls.ident[order]
    at = np.searchsorted(known, calls.parent)
    at = np.minimum(at, max(len(known) - 1, 0))
    parent = np.where((len(known) > 0) & (known[at] == calls.parent), order[at], -1)
    is_chosen = np.full(len(calls.name), -1, dtype=np.int64)
    is_chosen[chosen] = np.arange(len(chosen))
    is_module = mask_names(calls.name, calls.names, _is_module_name)
    up = parent[chosen]
    for _ in range(len(calls.name)):
        stop = (up < 0) | is_module[np.maximum(up, 0)]
        if stop.all():
            break
        up = np.where(stop, up, parent[np.maximum(up, 0)])
    return np.where(up >= 0, is_chosen[np.maximum(up, 0)], -1)


def _paths(names: list[str], parent: Ints, start: Floats) -> list[str]:
    paths = [""] * len(names)
    for i in np.argsort(start, kind="stable").tolist():
        above = int(parent[i])
        paths[i] = names[i] if above < 0 else f"{paths[above]}/{names[i]}"
    return paths


def _innermost(found: _Calls, at_us: Floats, at_thread: Ints) -> Ints:
    """For each instant, the innermost module call of its thread enclosing it, or -1."""
    scale = float(max(np.abs(found.start).max(), np.abs(at_us).max(initial=0.0))) * 4.0 + 1.0
    keys = found.thread * scale + found.start
    order = np.argsort(keys, kind="stable")
    index = np.searchsorted(keys[order], at_thread * scale + at_us, side="right") - 1
    candidate = np.where(index >= 0, order[np.maximum(index, 0)], -1)
    candidate = np.where(found.thread[np.maximum(candidate, 0)] == at_thread, candidate, -1)
    for _ in range(len(found.start)):
        ended = (candidate >= 0) & (found.end[np.maximum(candidate, 0)] <= at_us)
        if not ended.any():
            break
        candidate = np.where(ended, found.parent[np.maximum(candidate, 0)], candidate)
    return candidate


def _backward_self(trace: TraceData, found: _Calls, lo: float, hi: float) -> dict[str, float]:
    """Each module's own backward time, from the autograd nodes its forward operators made."""
    ops, sequence = trace.ops, trace.op_sequence
    if len(sequence) != len(ops):
        return {}
    backward = mask_names(ops.name, trace.names, is_backward)
    forward_ops = np.flatnonzero(~backward & (sequence != NO_ID))
    owner = _innermost(found, ops.start_us[forward_ops], ops.thread[forward_ops])
    forward_ops, owner = forward_ops[owner >= 0], owner[owner >= 0]
    nodes = np.flatnonzero(backward & (ops.start_us >= lo) & (ops.start_us < hi))
    nodes = nodes[top_level(ops.start_us[nodes], ops.end_us[nodes], ops.thread[nodes])]
    if len(nodes) == 0:
        return {}
    by_sequence = dict(zip(sequence[forward_ops].tolist(), owner.tolist(), strict=True))
    own: dict[str, float] = defaultdict(float)
    for node, seq in zip(nodes.tolist(), sequence[nodes].tolist(), strict=True):
        call = by_sequence.get(seq)
        if call is not None:
            own[found.path[call]] += float(ops.end_us[node] - ops.start_us[node])
    return dict(own) if own else {"": 0.0}


def _node(
    path: str,
    forward: dict[str, list[float]],
    backward: dict[str, float],
    kids_of: dict[str, list[str]],
    steps: int,
) -> ModuleTime:
    kids = tuple(_node(p, forward, backward, kids_of, steps) for p in kids_of.get(path, ()))
    calls, total_us, self_us = forward[path]
    measured = bool(backward)
    back_self = backward.get(path, 0.0) / 1000 / steps if measured else None
    back_total = (
        back_self + sum(k.backward_ms or 0.0 for k in kids) if back_self is not None else None
    )
    return ModuleTime(
        name=path.rsplit("/", 1)[-1],
        calls=int(calls),
        forward_ms=total_us / 1000 / steps,
        forward_self_ms=self_us / 1000 / steps,
        backward_ms=back_total,
        backward_self_ms=back_self,
        children=kids,
    )
