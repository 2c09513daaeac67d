"""Find the training steps of a trace and move their boundaries to the device side.

Counted the way torch-tb-profiler counts them, so that the breakdown matches its numbers:
a host step (`ProfilerStep#N`) owns the device work launched by the runtime calls that lie wholly
inside it; the step then ends when the last of that device work ends (or when the host step
ends, if later) and the next step starts no earlier. The first step starts after any device work
launched before it has drained. Trailing steps whose device work was not captured in full (none
at all, or under 80% of the step before) are dropped. A trace without step markers is one step
spanning its CPU operators.
"""

from __future__ import annotations

from collections import Counter

import msgspec
import numpy as np
import numpy.typing as npt

from torchtop.traces.data import NO_ID, Floats, Ints, TraceData


class StepWindows(msgspec.Struct, frozen=True):
    start_us: Floats
    end_us: Floats
    numbers: list[int]
    has_markers: bool
    device_aligned: bool
    dropped_tail: int

    def __len__(self) -> int:
        return len(self.start_us)


def find_steps(trace: TraceData) -> StepWindows:
    start, end, numbers, has_markers = host_steps(trace)
    device_start, device_end, device_step = _device_work(trace, start, end)
    matched = device_step >= 0
    if not matched.any():
        return StepWindows(start, end, numbers, has_markers, False, 0)
    counts = np.bincount(device_step[matched], minlength=len(start))
    step_min = np.full(len(start), np.inf)
    step_max = np.full(len(start), -np.inf)
    np.minimum.at(step_min, device_step[matched], device_start[matched])
    np.maximum.at(step_max, device_step[matched], device_end[matched])
    previous_end = float(start[0])
    if np.isfinite(step_min[0]):
        before_first = device_end[~matched]
        before_first = before_first[before_first < step_min[0]]
        if len(before_first):
            previous_end = max(previous_end, float(before_first.max()))
    new_start, new_end = _align(start, end, step_min, step_max, previous_end)
    keep = _steps_to_keep(counts)
    return StepWindows(
        new_start[:keep], new_end[:keep], numbers[:keep], has_markers, True, len(start) - keep
    )


def host_steps(trace: TraceData) -> tuple[Floats, Floats, list[int], bool]:
    steps = trace.steps
    if len(steps):
        order = np.argsort(steps.start_us, kind="stable")
        numbers = [_step_number(trace.names[code]) for code in steps.name[order].tolist()]
        return steps.start_us[order], steps.end_us[order], numbers, True
    ops = trace.ops
    if len(ops):
        return np.array([ops.start_us.min()]), np.array([ops.end_us.max()]), [0], False
    everything = [s for s in (trace.kernels, trace.runtime, trace.annotations) if len(s)]
    if not everything:
        return np.zeros(1), np.zeros(1), [0], False
    lo = min(float(s.start_us.min()) for s in everything)
    hi = max(float(s.end_us.max()) for s in everything)
    return np.array([lo]), np.array([hi]), [0], False


def repeated_numbers(numbers: list[int]) -> str | None:
    """A note when step numbers repeat at different times (exact repeats are dropped in
    reading, `traces.duplicates`): the file joins several profiles, or the loop's count
    restarted. Each is still its own step."""
    seen = Counter(n for n in numbers if n >= 0)
    repeats = sorted(n for n, count in seen.items() if count > 1)
    if not repeats:
        return None
    shown = ", ".join(f"#{n} x{seen[n]}" for n in repeats[:3])
    more = f" and {len(repeats) - 3} more" if len(repeats) > 3 else ""
    return (
        f"step numbers repeat ({shown}{more}) at different times: the file may join several "
        "profiles; each is counted as its own step"
    )


def _step_number(name: str) -> int:
    try:
        return int(name.split("#", 1)[1])
    except (IndexError, ValueError):
        return -1


def _device_work(
    trace: TraceData, step_start: Floats, step_end: Floats
) -> tuple[Floats, Floats, Ints]:
    """Every kernel, memcpy and memset, with the index of the step that launched it (or -1)."""
    parts = [trace.kernels, trace.copies.spans, trace.memsets]
    start = np.concatenate([p.start_us for p in parts])
    end = np.concatenate([p.end_us for p in parts])
    correlation = np.concatenate([p.correlation for p in parts])
    runtime = trace.runtime
    runtime_step = _runtime_step(runtime.start_us, runtime.end_us, step_start, step_end)
    order = np.argsort(runtime.correlation, kind="stable")
    sorted_corr = runtime.correlation[order]
    position = np.searchsorted(sorted_corr, correlation, side="right") - 1
    found = (position >= 0) & (correlation != NO_ID)
    found[found] = sorted_corr[position[found]] == correlation[found]
    device_step = np.full(len(start), -1, dtype=np.int64)
    device_step[found] = runtime_step[order[position[found]]]
    return start, end, device_step


def _runtime_step(rt_start: Floats, rt_end: Floats, step_start: Floats, step_end: Floats) -> Ints:
    """The step whose host span wholly contains each runtime call, else -1."""
    index = np.searchsorted(step_start, rt_start, side="right") - 1
    inside = index >= 0
    inside[inside] = rt_end[inside] <= step_end[index[inside]]
    return np.where(inside, index, -1)


def _align(
    start: Floats, end: Floats, step_min: Floats, step_max: Floats, previous_end: float
) -> tuple[Floats, Floats]:
    new_start = np.empty_like(start)
    new_end = np.empty_like(end)
    for i in range(len(start)):
        s = max(previous_end, float(start[i]))
        e = (
            float(end[i])
            if not np.isfinite(step_min[i])
            else max(float(end[i]), float(step_max[i]))
        )
        e = max(e, s)
        new_start[i], new_end[i] = s, e
        previous_end = e
    return new_start, new_end


def _steps_to_keep(counts: npt.NDArray[np.int64]) -> int:
    if len(counts) <= 1:
        return len(counts)
    launched = np.flatnonzero(counts > 0)
    last = int(launched[-1])
    keep = last + 1
    if last > 0 and counts[last - 1] * 0.8 > counts[last]:
        keep = last
    return keep
