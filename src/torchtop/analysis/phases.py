"""Where a step's backward pass and optimizer run, from the operators' names.

Backward operators are the autograd engine's (`autograd::engine::evaluate_function: ...`);
the optimizer's are the ranges torch records around it (`Optimizer.step#SGD.step`,
`Optimizer.zero_grad#...`), as operators or user annotations depending on the schema.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from torchtop.analysis.steps import StepWindows
from torchtop.analysis.vocabulary import mask_names
from torchtop.traces.data import Floats, Spans, TraceData

BACKWARD_PREFIX = "autograd::engine::evaluate_function"
OPTIMIZER_PREFIX = "Optimizer."


def is_backward(name: str) -> bool:
    return name.startswith(BACKWARD_PREFIX)


def _is_optimizer(name: str) -> bool:
    return name.startswith(OPTIMIZER_PREFIX)


def step_phases(trace: TraceData, steps: StepWindows) -> list[Floats]:
    """Per step: its first backward operator's start and its last one's end (NaN, NaN where
    none), then each optimizer range's start and end within it."""
    back_start, back_end = _named(trace.ops, trace.names, is_backward)
    optimizer = _named(trace.ops, trace.names, _is_optimizer)
    annotated = _named(trace.annotations, trace.names, _is_optimizer)
    opt_start = np.concatenate([optimizer[0], annotated[0]])
    opt_end = np.concatenate([optimizer[1], annotated[1]])
    result = []
    for lo, hi in zip(steps.start_us.tolist(), steps.end_us.tolist(), strict=True):
        inside = (back_start >= lo) & (back_start < hi)
        if inside.any():
            bounds = [float(back_start[inside].min()), float(back_end[inside].max())]
        else:
            bounds = [float("nan"), float("nan")]
        mine = (opt_start >= lo) & (opt_start < hi)
        pairs = np.stack([opt_start[mine], opt_end[mine]], axis=1).ravel()
        result.append(np.concatenate([np.array(bounds), pairs]))
    return result


def _named(
    spans: Spans, names: list[str], predicate: Callable[[str], bool]
) -> tuple[Floats, Floats]:
    """The starts and ends of the spans whose name the predicate accepts."""
    mask = mask_names(spans.name, names, predicate)
    return spans.start_us[mask], spans.end_us[mask]
