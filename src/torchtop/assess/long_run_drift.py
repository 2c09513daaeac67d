"""What changed with a drift: the samples of the run before the steps slowed against after.

A drift's cause comes on with it: a GPU that throttles (its SM clock falls, its temperature
rises), another process landing on the machine (the CPU of processes outside the job), memory
that grew. Each is the median of the samples before `split_t` against the median after, named
only where it moved past `CHANGE`'s bar; the host and GPU samples kept are the newest hour's.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from torchtop.runs.records import GpuSample, HostSample
from torchtop.runs.state import RunState

CLOCK_FALL = 0.05
"""An SM clock 5% lower is throttling."""
TEMPERATURE_RISE_C = 5.0
OTHERS_RISE_PCT = 20.0
"""Other processes' CPU up by a fifth of a core."""
MEMORY_RISE = 0.05


def changed_with(state: RunState, pid: int, split_t: float) -> str:
    """The measured changes around `split_t`, in words; says so where nothing moved."""
    found = [*_gpu_changes(state.samples.gpu, split_t), *_host_changes(state, pid, split_t)]
    return "; ".join(found) if found else "no clock, temperature, other load or memory moved"


def _split(
    times: Sequence[float], values: Sequence[float | None], split_t: float
) -> tuple[float, float] | None:
    before = [v for t, v in zip(times, values, strict=True) if v is not None and t < split_t]
    after = [v for t, v in zip(times, values, strict=True) if v is not None and t >= split_t]
    if not before or not after:
        return None
    return float(np.median(before)), float(np.median(after))


def _gpu_changes(samples: Iterable[GpuSample], split_t: float) -> list[str]:
    found: list[str] = []
    kept = list(samples)
    indexes = sorted({d.index for s in kept for d in s.devices})
    for index in indexes:
        times = [s.t for s in kept for d in s.devices if d.index == index]
        devices = [d for s in kept for d in s.devices if d.index == index]
        clock = _split(times, [_num(d.sm_clock_mhz) for d in devices], split_t)
        if clock is not None and clock[1] < clock[0] * (1 - CLOCK_FALL):
            found.append(f"GPU {index} SM clock {clock[0]:.0f} -> {clock[1]:.0f} MHz")
        heat = _split(times, [_num(d.temperature_c) for d in devices], split_t)
        if heat is not None and heat[1] - heat[0] >= TEMPERATURE_RISE_C:
            found.append(f"GPU {index} {heat[0]:.0f} -> {heat[1]:.0f} C")
    return found


def _host_changes(state: RunState, pid: int, split_t: float) -> list[str]:
    host = list(state.samples.host)
    found: list[str] = []
    others = _split([s.t for s in host], [_others(s) for s in host], split_t)
    if others is not None and others[1] - others[0] >= OTHERS_RISE_PCT:
        found.append(f"other processes' CPU {others[0]:.0f}% -> {others[1]:.0f}% of a core")
    process = state.processes.get(pid)
    if process is not None:
        series = process.memory_series
        rss = _split(series.times.tolist(), _floats(series.values("rss_bytes")), split_t)
        if rss is not None and rss[1] > rss[0] * (1 + MEMORY_RISE):
            found.append(f"resident set {rss[0] / 2**20:.0f} -> {rss[1] / 2**20:.0f} MiB")
    return found


def _others(sample: HostSample) -> float | None:
    return _num(sample.others_cpu_pct)


def _floats(values: np.ndarray) -> list[float | None]:
    return [None if np.isnan(v) else float(v) for v in values]


def _num(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None
