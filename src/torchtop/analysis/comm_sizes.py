"""Message sizes and bandwidth per collective kind, from the collectives' own records.

A message's size is the larger of its input and output buffers (`max(In, Out msg nelems)` x
the dtype's size): the whole buffer the collective moves, as NCCL-tests counts its `size`
(all_reduce and broadcast: in = out; all_gather: the gathered output; reduce_scatter: the
input that is scattered). Bandwidth follows NCCL-tests too: `algbw` = size / time, and
`busbw` = algbw x the kind's bus factor for n ranks (all_reduce 2(n-1)/n, all_gather,
reduce_scatter and all_to_all (n-1)/n, the rest 1), comparable with the link's peak. The time is
the device kernels each call launched (a kernel is the call's when the host launched it inside
the call's `record_param_comms` range on the same thread), or, on a CPU job, the host's time of
that kind. A kind without sizes keeps None, never 0.
"""

from __future__ import annotations

import numpy as np
from msgspec.structs import replace

from torchtop.analysis.vocabulary import median
from torchtop.model.analysis import MessageSizes
from torchtop.traces.data import NO_ID, Floats, Ints, Messages, Spans, TraceData

# `Collective name` words (`_allgather_base`, `reduce_scatter_tensor_coalesced`) to the kinds
# `comms.kernel_kind` names; `wait` is a wait on a handle, not a collective.
_SUFFIXES = ("_base", "_coalesced", "_into_tensor", "_tensor", "_single")
_KINDS = {
    "allreduce": "all_reduce",
    "allgather": "all_gather",
    "reducescatter": "reduce_scatter",
    "alltoall": "all_to_all",
    "alltoallv": "all_to_all",
    "send": "send_recv",
    "recv": "send_recv",
}
_NOT_COLLECTIVES = frozenset({"wait", ""})


def message_kind(collective_name: str) -> str | None:
    """The kind of a `Collective name` (`_allgather_base` -> all_gather); None: not one."""
    word = collective_name.lower().strip("_")
    changed = True
    while changed:
        changed = False
        for suffix in _SUFFIXES:
            if word.endswith(suffix):
                word, changed = word[: -len(suffix)], True
    word = word.replace("_", "")
    return None if word in _NOT_COLLECTIVES else _KINDS.get(word, word)


def bus_factor(kind: str, ranks: float) -> float | None:
    """NCCL-tests' busbw / algbw for `ranks` ranks; None where the group size is unknown."""
    if not np.isfinite(ranks) or ranks < 2:
        return None  # one rank moves nothing over a bus
    if kind == "all_reduce":
        return 2.0 * (ranks - 1) / ranks
    if kind in ("all_gather", "reduce_scatter", "all_to_all"):
        return (ranks - 1) / ranks
    return 1.0


def host_window(trace: TraceData, kept_steps: int) -> tuple[float, float] | None:
    """The host's span of the first `kept_steps` ProfilerSteps: the calls are host records, so
    they are matched to the steps as the host ran them (a device runs its steps' work later,
    on a deep queue by a whole step). None: no step markers, every call counts."""
    steps = trace.steps
    if len(steps) == 0 or kept_steps == 0:
        return None
    order = np.argsort(steps.start_us, kind="stable")[:kept_steps]
    return float(steps.start_us[order].min()), float(steps.end_us[order].max())


def message_sizes(
    trace: TraceData,
    window_us: tuple[float, float] | None,
    comm_kernels: Spans,
    host_time_us: dict[str, float],
) -> dict[str, MessageSizes]:
    """Per kind: the sizes of the calls starting inside `window_us` and, where their time is
    known, the bandwidth. `comm_kernels`: the trace's collective kernels; `host_time_us`: each
    kind's host time, used on a CPU job (no kernels)."""
    messages = trace.messages
    if len(messages) == 0:
        return {}
    keep = np.ones(len(messages), dtype=np.bool_)
    if window_us is not None:
        keep = (messages.start_us >= window_us[0]) & (messages.start_us < window_us[1])
    sizes = np.maximum(messages.in_nelems, messages.out_nelems) * messages.element_bytes
    device_us = _device_time(messages, trace, comm_kernels)
    kinds = [message_kind(name) for name in messages.names]
    found: dict[str, MessageSizes] = {}
    for kind in sorted({k for k in kinds if k is not None}):
        codes = [code for code, k in enumerate(kinds) if k == kind]
        known = keep & np.isin(messages.collective, codes) & np.isfinite(sizes)
        if not known.any():
            continue
        found[kind] = _sizes(kind, sizes, device_us, known, messages.group_size, host_time_us)
    return found


def _sizes(
    kind: str,
    sizes: Floats,
    device_us: Floats | None,
    known: np.ndarray,
    group: Floats,
    host_time_us: dict[str, float],
) -> MessageSizes:
    ranks = median(group[known & np.isfinite(group)])
    total = float(sizes[known].sum())
    if device_us is not None:
        timed = known & (device_us > 0)
        moved, time_us = float(sizes[timed].sum()), float(device_us[timed].sum())
    else:
        moved, time_us = total, host_time_us.get(kind, 0.0)
    return with_bandwidth(
        MessageSizes(
            count=int(known.sum()),
            total_bytes=total,
            median_bytes=median(sizes[known]),
            largest_bytes=float(sizes[known].max()),
            group_size=int(ranks) if np.isfinite(ranks) else None,
            algbw_gbps=None,
            busbw_gbps=None,
            timed_bytes=moved,
            timed_us=time_us,
        ),
        kind,
    )


def with_bandwidth(sizes: MessageSizes, kind: str) -> MessageSizes:
    """`sizes` with algbw and busbw (GB/s, 1e9 bytes) from its timed bytes and time."""
    if sizes.timed_us <= 0 or sizes.timed_bytes <= 0:
        return replace(sizes, algbw_gbps=None, busbw_gbps=None)
    algbw = sizes.timed_bytes / sizes.timed_us / 1e3
    factor = bus_factor(kind, float("nan") if sizes.group_size is None else sizes.group_size)
    return replace(
        sizes,
        algbw_gbps=round(algbw, 3),
        busbw_gbps=None if factor is None else round(algbw * factor, 3),
    )


def pooled_sizes(parts: list[MessageSizes], kind: str) -> MessageSizes | None:
    """Several files' or ranks' sizes as one: counts, bytes and times summed, the largest the
    largest; the median is the count-weighted median of the parts' medians (the calls
    themselves are not kept), exact when the parts are alike, as a job's ranks are."""
    if not parts:
        return None
    if len(parts) == 1:
        return parts[0]
    medians = np.repeat([p.median_bytes for p in parts], [p.count for p in parts])
    groups = [p.group_size for p in parts if p.group_size is not None]
    return with_bandwidth(
        MessageSizes(
            count=sum(p.count for p in parts),
            total_bytes=sum(p.total_bytes for p in parts),
            median_bytes=median(medians.astype(np.float64)),
            largest_bytes=max(p.largest_bytes for p in parts),
            group_size=max(groups) if groups else None,
            algbw_gbps=None,
            busbw_gbps=None,
            timed_bytes=sum(p.timed_bytes for p in parts),
            timed_us=sum(p.timed_us for p in parts),
        ),
        kind,
    )


def _device_time(messages: Messages, trace: TraceData, kernels: Spans) -> Floats | None:
    """Each call's kernels' time (`kernel_calls`). None: a CPU job (no kernels at all), whose
    host time is the collective's; a GPU job's host ranges are not, so its calls without
    collective kernels stay untimed."""
    if len(trace.kernels) == 0:
        return None
    result = np.zeros(len(messages))
    calls = kernel_calls(messages, trace, kernels)
    mine = calls >= 0
    np.add.at(result, calls[mine], kernels.dur_us[mine])
    return result


def kernel_calls(messages: Messages, trace: TraceData, kernels: Spans) -> Ints:
    """For each of `kernels`, the index of the call that launched it, or -1: the call whose
    host range holds the runtime call that launched the kernel."""
    result = np.full(len(kernels), -1, dtype=np.int64)
    if len(messages) == 0:
        return result
    launched = launch_times(trace, kernels)
    by_start = np.argsort(messages.start_us, kind="stable")
    starts, ends = messages.start_us[by_start], messages.end_us[by_start]
    index = np.searchsorted(starts, launched, side="right") - 1
    inside = np.isfinite(launched) & (index >= 0)
    inside[inside] = launched[inside] < ends[index[inside]]
    result[inside] = by_start[index[inside]]
    return result


def launch_times(trace: TraceData, device: Spans) -> Floats:
    """When the host launched each of `device`'s spans: its runtime call's start, matched by
    correlation id; NaN where none matches."""
    result = np.full(len(device), np.nan)
    runtime = trace.runtime
    if len(runtime) == 0 or len(device) == 0:
        return result
    order = np.argsort(runtime.correlation, kind="stable")
    ids = runtime.correlation[order]
    at = np.minimum(np.searchsorted(ids, device.correlation), len(ids) - 1)
    found = (ids[at] == device.correlation) & (device.correlation != NO_ID)
    result[found] = runtime.start_us[order][at[found]]
    return result
