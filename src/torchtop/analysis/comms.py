"""Communication by collective kind: how many, how long and what share of step time.

The device's collective kernels are where a GPU job's communication time is spent, so their
names (`ncclKernel_AllReduce_...`, `ncclDevKernel_AllGather_...`, RCCL alike) give the kind and
their durations the time. A CPU job (gloo) has no such kernels: its host ranges (`gloo:all_reduce`,
`nccl:all_to_all` annotations) are the collective's time instead. NCCL runs all_to_all as
SendRecv kernels: where the host called all_to_all and no send/recv, those kernels are named
all_to_all. Message sizes come from the calls' own records (`comm_sizes`): `bytes` is their
total where the trace has them, else None (not measured), never 0. A kind the kernels' names do
not tell (RCCL's `ncclDevKernel_Generic`) is also listed under the calls' kind, timed by the
kernels those calls launched, beside the kernels' own entry.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

import numpy as np

from torchtop.analysis.comm_sizes import message_sizes, pooled_sizes
from torchtop.analysis.vocabulary import COLLECTIVE_PREFIXES, comm_family_kind, distinct
from torchtop.model.analysis import CommStat, Metrics
from torchtop.traces.data import Spans, TraceData

_KERNEL_KIND = re.compile(r"^(?:nccl|rccl)(?:Dev)?Kernel_([A-Za-z]+)", re.IGNORECASE)
_KINDS = {
    "allreduce": "all_reduce",
    "allgather": "all_gather",
    "reducescatter": "reduce_scatter",
    "alltoall": "all_to_all",
    "broadcast": "broadcast",
    "reduce": "reduce",
    "sendrecv": "send_recv",
    "send": "send_recv",
    "recv": "send_recv",
}


def kernel_kind(name: str) -> str | None:
    """The collective kind of a device kernel's name; None: not a collective kernel."""
    is_comm, family_kind = comm_family_kind(name)
    if not is_comm:
        return None
    if family_kind is not None:
        return family_kind
    found = _KERNEL_KIND.match(name)
    word = found.group(1).lower() if found else ""
    return _KINDS.get(word, word or "other")


def host_kind(name: str) -> str | None:
    """The kind of a host collective range (`gloo:all_reduce` -> all_reduce); None: not one."""
    for prefix in COLLECTIVE_PREFIXES:
        if name.startswith(prefix):
            return name[len(prefix) :].strip() or "other"
    return None


def collective_stats(
    trace: TraceData,
    window_us: tuple[float, float] | None,
    step_total_us: float,
    host_window_us: tuple[float, float] | None = None,
) -> tuple[CommStat, ...]:
    """Per kind, in name order: the kernels' time where the device ran any, else the host's.

    Only collectives starting inside `window_us` (first step's start to last step's end) count,
    as the breakdown's steps do, so a share is of the same time; None: the whole trace. The
    calls' sizes count inside `host_window_us`, the same steps as the host ran them."""
    found = _by_kind(_within(trace.kernels, window_us), trace.names, kernel_kind)
    # Host ranges nest (`c10d::allreduce_` around `gloo:all_reduce`): each kind's time is the
    # union of its ranges and its count the ranges no other of its kind holds.
    host = _by_kind(_within(trace.annotations, window_us), trace.names, host_kind, nested=True)
    if not found:
        found = host
    elif "send_recv" in found and "all_to_all" in host and not {"send", "recv"} & host.keys():
        # The host called all_to_all and no point-to-point: the SendRecv kernels are its.
        found["all_to_all"] = found.pop("send_recv")
    kernels = trace.kernels.select(_kernel_mask(trace))
    sizes = message_sizes(trace, host_window_us, kernels, {k: t for k, (_, t) in host.items()})
    for kind, sized in sizes.items():
        if kind not in found and sized.timed_us > 0:
            found[kind] = (sized.count, sized.timed_us)
    return tuple(
        CommStat(
            kind=kind,
            count=count,
            total_us=total_us,
            share=total_us / step_total_us if step_total_us > 0 else None,
            bytes=sizes[kind].total_bytes if kind in sizes else None,
            sizes=sizes.get(kind),
        )
        for kind, (count, total_us) in sorted(found.items())
    )


def _kernel_mask(trace: TraceData) -> np.ndarray:
    kinds = {int(c): kernel_kind(trace.names[int(c)]) for c in distinct(trace.kernels.name)}
    return np.isin(trace.kernels.name, [c for c, k in kinds.items() if k is not None])


def _within(spans: Spans, window_us: tuple[float, float] | None) -> Spans:
    if window_us is None:
        return spans
    lo, hi = window_us
    keep = (spans.start_us >= lo) & (spans.start_us < hi)
    # A collective still running when the last step ends counts up to that end, so a share is
    # of the steps' own time. Only the fields counted here: some span kinds leave their id
    # arrays empty.
    threads = spans.thread[keep] if len(spans.thread) == len(spans) else spans.thread
    return Spans(
        spans.start_us[keep], np.minimum(spans.end_us[keep], hi), spans.name[keep], threads
    )


def _by_kind(
    spans: Spans,
    names: list[str],
    kind_of: Callable[[str], str | None],
    nested: bool = False,
) -> dict[str, tuple[int, float]]:
    kinds = {int(c): kind_of(names[int(c)]) for c in distinct(spans.name)}
    masks: dict[str, np.ndarray] = {}
    for code, kind in kinds.items():
        if kind is not None:
            mask = spans.name == code
            masks[kind] = masks[kind] | mask if kind in masks else mask
    found: dict[str, tuple[int, float]] = {}
    for kind, mask in masks.items():
        starts, ends = spans.start_us[mask], spans.end_us[mask]
        if nested:
            found[kind] = (_calls(spans, mask), _union(starts, ends)[1])
        else:
            found[kind] = (int(mask.sum()), float((ends - starts).sum()))
    return found


def _calls(spans: Spans, mask: np.ndarray) -> int:
    """Ranges no earlier one of the same thread holds: a call's ranges nest on its thread,
    while gloo runs calls on two threads at once, whose ranges may lie one inside another."""
    if len(spans.thread) != len(spans):
        return _union(spans.start_us[mask], spans.end_us[mask])[0]
    threads = spans.thread[mask]
    starts, ends = spans.start_us[mask], spans.end_us[mask]
    return sum(_union(starts[threads == t], ends[threads == t])[0] for t in distinct(threads))


def _union(starts: np.ndarray, ends: np.ndarray) -> tuple[int, float]:
    """How many ranges no earlier one holds, and the length of their union."""
    count, total_us, reach = 0, 0.0, float("-inf")
    for start, end in sorted(zip(starts.tolist(), ends.tolist(), strict=True)):
        if start >= reach:
            count += 1
            total_us += end - start
            reach = end
        elif end > reach:
            total_us += end - reach
            reach = end
    return count, total_us


def pooled(parts: Sequence[tuple[CommStat, ...]], weights: Sequence[float]) -> tuple[CommStat, ...]:
    """Counts and times summed; shares the weighted mean (a part without a kind counts as 0)."""
    total_weight = sum(weights) or 1.0
    kinds = sorted({s.kind for part in parts for s in part})
    merged = []
    for kind in kinds:
        stats = [
            (s, w) for part, w in zip(parts, weights, strict=True) for s in part if s.kind == kind
        ]
        shares = [(s.share, w) for s, w in stats if s.share is not None]
        merged.append(
            CommStat(
                kind=kind,
                count=sum(s.count for s, _ in stats),
                total_us=sum(s.total_us for s, _ in stats),
                share=sum(v * w for v, w in shares) / total_weight if shares else None,
                bytes=_sum_or_none([s.bytes for s, _ in stats]),
                sizes=pooled_sizes([s.sizes for s, _ in stats if s.sizes is not None], kind),
            )
        )
    return tuple(merged)


def _sum_or_none(values: list[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return sum(known) if known else None


def size_metrics(stats: Sequence[CommStat], steps: int) -> Metrics:
    """What the rules read of the all-reduces: calls per step, median message and bus
    bandwidth; None where not measured."""
    reduce = next((s for s in stats if s.kind == "all_reduce"), None)
    sizes = None if reduce is None else reduce.sizes
    return {
        "allreduce_calls_per_step": reduce.count / steps if reduce and steps else None,
        "allreduce_median_message_bytes": None if sizes is None else sizes.median_bytes,
        "allreduce_busbw_gbps": None if sizes is None else sizes.busbw_gbps,
    }
