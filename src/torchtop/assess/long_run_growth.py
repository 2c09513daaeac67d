"""Memory that grows steadily, per process: its rate a step and an hour, the time left to the
nearest limit, where it grows, and the caching allocator's fragmentation.

Host memory is the process's resident set at its step ends; its limits are the machine's free
RAM (the run's newest host sample: total less used), the process's own RLIMIT_AS less its
address space (VmSize), both read by the host sampler, and, on the machine that launched the
job, the cgroup's limit it inherited (`Context.memory_limits`) less its resident set (and the
inherited RLIMIT_AS, where the sampler could not read the process's own). Device memory is the
caching allocator's allocated bytes at step ends (reserved where allocated is not read),
against the device's capacity less what is reserved.
The time left is the nearest headroom over the rate per second at the run's step rate.
"""

from __future__ import annotations

import msgspec
import numpy as np

from torchtop.analysis.growth import Growth, steady_growth
from torchtop.assess.context import Context
from torchtop.assess.long_run_where import place
from torchtop.model.analysis import Metrics
from torchtop.model.report import StackLine
from torchtop.runs.records import HostSample
from torchtop.runs.state import ProcessState, RunState
from torchtop.runs.step_blocks import FIRST_STEP

Spans = tuple[tuple[float, float], ...] | list[tuple[float, float]]
"""Start and end times."""
MIB = 2**20
MIN_RISE_BYTES = 16 * MIB
"""Growth over the whole series under this is not named, however steady."""
FRAGMENTED_TAIL = 0.25
"""Fragmentation is read over the newest quarter of the series."""


def growth_metrics(
    state: RunState, context: Context, stalled: Spans = ()
) -> tuple[Metrics, dict[str, str]]:
    """The fastest steady growth of host and device memory; `stalled`: the spans of stalls,
    whose stacks say where the loop stalls, not where its memory grows."""
    metrics: Metrics = {"rss_growth_bytes_per_step": None, "cuda_growth_bytes_per_step": None}
    places: dict[str, str] = {}
    for family, series in (("rss_growth", "rss_bytes"), ("cuda_growth", "cuda_allocated_bytes")):
        found = _fastest(state.training_processes, series)
        if found is None:
            continue
        process, growth = found
        headroom = _headroom(state, context, process, family, growth)
        metrics.update(_rate_metrics(family, process, growth, headroom))
        where = place(_stacks_over(state, process, growth, stalled))
        metrics[f"{family}_where"] = where or "no stack sampled while it grew"
        if where is not None:
            places[family] = where
    metrics.update(fragmentation_metrics(state.training_processes))
    return metrics, places


CANDIDATES = 4
"""Processes whose series is fitted each tick: those that rose most (a job of 512 ranks would
cost a Theil-Sen fit each, ~3 ms, on every live tick)."""


def _fastest(processes: list[ProcessState], series: str) -> tuple[ProcessState, Growth] | None:
    columns = []
    for process in processes:
        memory = process.memory_series
        kept = memory.steps >= FIRST_STEP
        columns.append((process, memory.steps[kept], memory.values(series)[kept]))
    rising = sorted((c for c in columns if _rise(c[2]) > 0), key=lambda c: -_rise(c[2]))
    found = []
    for process, steps, values in rising[:CANDIDATES]:
        growth = steady_growth(steps, values, MIN_RISE_BYTES)
        if growth is not None:
            found.append((process, growth))
    return max(found, key=lambda f: f[1].bytes_per_step, default=None)


def _rise(values: np.ndarray) -> float:
    """The last tenth's median less the first tenth's: a crude rise, to pick what to fit."""
    read = values[~np.isnan(values)]
    tenth = max(len(read) // 10, 1)
    return float(np.median(read[-tenth:]) - np.median(read[:tenth])) if len(read) > 1 else 0.0


def _headroom(
    state: RunState, context: Context, process: ProcessState, family: str, growth: Growth
) -> tuple[str, float] | None:
    """The nearest limit's name and the bytes left under it."""
    room: list[tuple[str, float]] = []
    if family == "cuda_growth":
        capacity = process.memory.capacity_bytes
        held = process.memory_series.values("cuda_reserved_bytes")
        held = held[~np.isnan(held)]
        used = float(held[-1]) if len(held) else growth.last_bytes
        if capacity is not None:
            room.append(("device capacity", capacity - used))
        return min(room, key=lambda r: r[1], default=None)
    newest = _last_alive(state, process.pid)
    if newest is not None and newest.mem_used_bytes is not None:
        total, used = float(newest.mem_total_bytes or 0), float(newest.mem_used_bytes)
        room.append((f"physical RAM, {total / 2**30:.1f} GiB", total - used))
    space = _address_space(state, process.pid)
    if space is not None and space[1] is not None:
        room.append((f"RLIMIT_AS, {space[1] / 2**30:.1f} GiB", space[1] - space[0]))
    launched_here = state.launch.host in (None, context.hostname)
    for name, limit in context.memory_limits if launched_here else ():
        if name == "RLIMIT_AS" and space is not None:
            continue  # the job's own limit, read above, whether it kept this one or not
        room.append((f"{name}, {limit / 2**30:.1f} GiB", limit - growth.last_bytes))
    return min(room, key=lambda r: r[1], default=None)


def _last_alive(state: RunState, pid: int) -> HostSample | None:
    """The newest host sample that measured the machine's memory while the process held its
    own: once it has exited, the RAM it freed is no room it had (an hour-long run's report,
    from a sample after its end, said 35,100 s to the limit where 31,700 s were left)."""
    measured = [s for s in reversed(state.samples.host) if s.mem_total_bytes]
    alive = (s for s in measured if any(p.pid == pid and p.rss_bytes for p in s.processes))
    return next(alive, measured[0] if measured else None)


def _address_space(state: RunState, pid: int) -> tuple[float, int | None] | None:
    """The process's newest address space (VmSize) and its own RLIMIT_AS (None: unlimited),
    from the host samples; None where neither was read. RLIMIT_AS bounds the address space,
    which runs ahead of the resident set (thread stacks, malloc arenas, reserved mappings), so
    the room under it is counted from there, not from the resident set."""
    for sample in reversed(state.samples.host):
        for row in sample.processes:
            # A process that has exited but not been reaped reads an address space of 0.
            if row.pid == pid and isinstance(row.vm_bytes, int) and row.vm_bytes > 0:
                if isinstance(row.as_limit_bytes, msgspec.UnsetType):
                    return None
                return float(row.vm_bytes), row.as_limit_bytes
    return None


def _rate_metrics(
    family: str, process: ProcessState, growth: Growth, headroom: tuple[str, float] | None
) -> Metrics:
    _, walls, _ = process.walls.columns_since(FIRST_STEP)
    per_s = len(walls) / float(walls.sum()) if float(walls.sum()) > 0 else None
    bytes_per_s = growth.bytes_per_step * per_s if per_s is not None else None
    seconds = None
    if headroom is not None and bytes_per_s:
        seconds = max(headroom[1], 0.0) / bytes_per_s
    hour = f" ({bytes_per_s * 3600 / 2**30:.2f} GiB an hour)" if bytes_per_s else ""
    oom = ""
    if seconds is not None and headroom is not None:
        left = f"{seconds / 60:.0f} min" if seconds >= 120 else f"{seconds:.0f} s"
        oom = f"; out of memory in ~{left} at this rate ({headroom[0]})"
    return {
        f"{family}_bytes_per_step": round(growth.bytes_per_step, 1),
        f"{family}_bytes_per_hour": round(bytes_per_s * 3600) if bytes_per_s else None,
        f"{family}_seconds_to_limit": round(seconds, 1) if seconds is not None else None,
        f"{family}_rank": process.label,
        f"{family}_first_step": growth.first_step,
        f"{family}_last_step": growth.last_step,
        f"{family}_rate": f"{growth.bytes_per_step / MIB:.2f} MiB a step{hour}{oom}",
    }


def _stacks_over(
    state: RunState, process: ProcessState, growth: Growth, stalled: Spans
) -> list[tuple[StackLine, ...]]:
    """The process's stacks sampled over the steps its memory grew, outside `stalled`."""
    numbers, walls, ends = process.walls.columns_since(growth.first_step)
    inside = numbers <= growth.last_step
    if not inside.any():
        return []
    start = float(ends[inside][0] - walls[inside][0])
    end = float(ends[inside][-1])
    spans, begin = [], start
    for stall_start, stall_end in sorted(stalled):
        if stall_start > begin:
            spans.append((begin, min(stall_start, end)))
        begin = max(begin, stall_end)
    spans.append((begin, end))
    return state.stack_marks.within(process.pid, [s for s in spans if s[0] < s[1]])


def fragmentation_metrics(processes: list[ProcessState]) -> Metrics:
    """The newest quarter's median of reserved less the step's peak allocated: cached blocks
    the allocator holds yet no step used, the most of any process."""
    worst: tuple[float, float] | None = None
    for process in processes:
        memory = process.memory_series
        reserved = memory.values("cuda_reserved_bytes")
        peak = memory.values("cuda_peak_allocated_bytes")
        tail = slice(int(len(reserved) * (1 - FRAGMENTED_TAIL)), None)
        gap = (reserved - peak)[tail]
        gap, held = gap[~np.isnan(gap)], reserved[tail][~np.isnan(gap)]
        if len(gap) and float(np.median(held)) > 0:
            found = (float(np.median(gap)), float(np.median(gap) / np.median(held)))
            worst = found if worst is None or found[0] > worst[0] else worst
    if worst is None:
        return {"cuda_fragmentation_bytes": None, "cuda_fragmentation_share": None}
    return {
        "cuda_fragmentation_bytes": round(worst[0]),
        "cuda_fragmentation_share": round(worst[1], 4),
    }
