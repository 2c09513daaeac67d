"""Kernels that run one after another and could be one: chains of memory-bound elementwise
kernels (`rules/elementwise-chains.toml`), and the most frequent kernel sequences of a step,
named as fusion candidates as Holistic Trace Analysis's `get_frequent_cuda_kernel_sequences`
names them (`rules/fusion-candidates.toml`).

Both read the kernels of each device in the order they ran. The time a fusion saves is
modelled from measured durations: a fused kernel makes one pass over the data where the
sequence made one per kernel, so it takes about as long as the sequence's longest kernel (the
one that moves the most bytes, or the GEMM an epilogue joins), and the rest goes.
"""

from __future__ import annotations

import re

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from torchtop.analysis.launches import Bools
from torchtop.analysis.vocabulary import codes_where, is_comm_kernel
from torchtop.model.analysis import Metrics
from torchtop.traces.data import Floats, Ints, TraceData

_ELEMENTWISE = re.compile(r"elementwise_kernel")
"""PyTorch's TensorIterator kernels (`vectorized_elementwise_kernel`, `unrolled_...`,
`elementwise_kernel<...>`), on CUDA and ROCm alike: one pass over memory each."""
_COMPUTE = re.compile(
    r"gemm|gemv|Cijk_|xmma|cutlass|scudnn|cudnn::(?:detail|cnn)|implicit_convolve|conv|wgrad|"
    r"dgrad|winograd|fft|flash|fmha|attn|xdl|mfma",
    re.IGNORECASE,
)
"""Compute kernels (GEMMs, convolutions, attention): a fusion keeps them, and takes the
memory-bound kernels next to them in as their prologue or epilogue."""
MIN_CHAIN = 3
SEQUENCE_LENGTHS = (3, 4, 5)
"""HTA's `min_pattern_len` is 3; longer repeats show as their own candidates up to 5."""
TOP = 3


def in_order(trace: TraceData, lo: float, hi: float) -> list[Ints]:
    """Per device, the indices of its kernels that start within [lo, hi], in start order."""
    kernels = trace.kernels
    within = np.flatnonzero((kernels.start_us >= lo) & (kernels.start_us <= hi))
    order = within[np.lexsort((kernels.start_us[within], kernels.device[within]))]
    devices = kernels.device[order]
    cuts = np.flatnonzero(devices[1:] != devices[:-1]) + 1
    return [part for part in np.split(order, cuts) if len(part)]


def chain_metrics(trace: TraceData, order: list[Ints], step_us: float, steps: int) -> Metrics:
    """Runs of at least `MIN_CHAIN` elementwise kernels back to back on a device: their share
    of the step, how many a step, and the share a fusion of each run saves."""
    codes = codes_where(trace.names, lambda n: _ELEMENTWISE.search(n) is not None)
    chained_us = saved_us = 0.0
    chains = 0
    for indices in order:
        flags = np.isin(trace.kernels.name[indices], codes)
        starts, ends = _runs(flags)
        long = (ends - starts) >= MIN_CHAIN
        if not long.any():
            continue
        times = trace.kernels.dur_us[indices]
        sums, longest = _run_sums(times, starts[long], ends[long])
        chains += int(long.sum())
        chained_us += float(sums.sum())
        saved_us += float((sums - longest).sum())
    return {
        "elementwise_chain_share": chained_us / step_us,
        "elementwise_chains_per_step": chains / max(steps, 1),
        "elementwise_fusion_share": saved_us / step_us,
    }


def _run_sums(times: Floats, starts: Ints, ends: Ints) -> tuple[Floats, Floats]:
    """Each run's summed and longest time: `reduceat` over the runs' bounds, whose every other
    segment is a run (runs never touch: a false flag lies between any two)."""
    bounds = np.column_stack([starts, ends]).ravel()
    if bounds[-1] == len(times):
        bounds = bounds[:-1]  # the last run reaches the end: its segment does too
    return np.add.reduceat(times, bounds)[::2], np.maximum.reduceat(times, bounds)[::2]


def _runs(flags: Bools) -> tuple[Ints, Ints]:
    """The first position and one past the last of each run of true flags."""
    padded = np.concatenate(([False], flags, [False])).astype(np.int8)
    edges = np.flatnonzero(np.diff(padded))
    return edges[::2], edges[1::2]


def sequence_metrics(
    trace: TraceData, order: list[Ints], claimed: Bools, step_us: float, steps: int
) -> Metrics:
    """The kernel sequences whose fusion would save the most time: the best one's repeats a
    step and saved share, and the top few named (`fusion_candidates`). A sequence holding a
    `claimed` kernel (one another finding's fix already removes: hand-written attention) is
    left out, so that two findings do not promise the same time."""
    found = _candidates(trace, order, claimed)
    if not found:
        return {}
    listed = _distinct(found)[:TOP]
    best = listed[0]
    return {
        "fusion_top_per_step": best[1] / max(steps, 1),
        "fusion_top_share": best[2] / step_us,
        "fusion_candidates": "; ".join(
            f"{' > '.join(short_name(trace.names[c]) for c in codes)} "
            f"({count / max(steps, 1):.0f}x a step, {saved / step_us:.1%} of it saved)"
            for codes, count, saved in listed
        ),
    }


Candidate = tuple[tuple[int, ...], int, float]
"""The kernel name codes of a sequence, its occurrences, and the time fusing them saves."""


def _candidates(trace: TraceData, order: list[Ints], claimed: Bools) -> list[Candidate]:
    comm = set(codes_where(trace.names, _is_collective).tolist())
    compute = codes_where(trace.names, lambda n: _COMPUTE.search(n) is not None)
    totals: dict[tuple[int, ...], list[float]] = {}
    for indices in order:
        names = np.where(claimed[indices], -1, trace.kernels.name[indices])
        durations = trace.kernels.dur_us[indices]
        memory_bound = ~np.isin(names, compute)
        for n in SEQUENCE_LENGTHS:
            if len(names) >= n:
                _count_grams(names, durations, memory_bound, n, totals)
    ranked = [
        (codes, int(count), saved)
        for codes, (count, saved) in totals.items()
        if count >= 2 and -1 not in codes and not comm.intersection(codes)
    ]
    ranked.sort(key=lambda c: -c[2])
    return ranked


def _count_grams(
    names: Ints,
    durations: Floats,
    memory_bound: Bools,
    n: int,
    totals: dict[tuple[int, ...], list[float]],
) -> None:
    """Add each n-gram of `names` to `totals`: its count and the time fusing it saves (the
    memory-bound kernels' time, but for the longest of them where no compute kernel is there
    to take them in)."""
    grams = sliding_window_view(names, n)
    light = sliding_window_view(np.where(memory_bound, durations, 0.0), n)
    alone = sliding_window_view(memory_bound, n).all(axis=1)
    unique, inverse, counts = np.unique(grams, axis=0, return_inverse=True, return_counts=True)
    each = light.sum(axis=1) - np.where(alone, light.max(axis=1), 0.0)
    saved = np.bincount(inverse.reshape(-1), weights=each, minlength=len(unique))
    for row, count, value in zip(unique.tolist(), counts.tolist(), saved.tolist(), strict=True):
        entry = totals.setdefault(tuple(row), [0.0, 0.0])
        entry[0] += count
        entry[1] += value


_COLLECTIVE = re.compile(r"all_?reduce|all_?gather|reduce_?scatter|all_?to_?all", re.IGNORECASE)


def _is_collective(name: str) -> bool:
    """A communication kernel: the families `is_comm_kernel` knows, and the collectives other
    libraries name by what they do (`multimem_all_reduce_kernel`, vLLM's custom all-reduce)."""
    return is_comm_kernel(name) or _COLLECTIVE.search(name) is not None


def _distinct(found: list[Candidate]) -> list[Candidate]:
    """The candidates, best first, leaving out one that lies inside a better one listed (a
    3-kernel part of a 5-kernel sequence) or holds one."""
    kept: list[Candidate] = []
    for candidate in found:
        codes = candidate[0]
        if not any(_holds(k[0], codes) or _holds(codes, k[0]) for k in kept):
            kept.append(candidate)
        if len(kept) == TOP:
            break
    return kept


def _holds(outer: tuple[int, ...], inner: tuple[int, ...]) -> bool:
    """Whether `inner` runs inside `outer`, in order and back to back."""
    size = len(inner)
    return any(outer[i : i + size] == inner for i in range(len(outer) - size + 1))


_NOISE = frozenset(
    [
        "at",
        "native",
        "c10",
        "BFloat16",
        "Half",
        "float",
        "int",
        "unsigned",
        "long",
        "char",
        "std",
        "array",
        "void",
        "anonymous",
        "namespace",
        "detail",
        "cuda",
        "bool",
        "double",
        "const",
        "true",
        "false",
        "type",
        "enable_if",
    ]
)


_KERNELISH = re.compile(r"kernel|Kernel|_impl|Impl|Forward|Backward")


def short_name(kernel: str) -> str:
    """A kernel's name short enough to list: its template's telling part where it has one
    (`vectorized_elementwise_kernel[MulFunctor]`), else the name without its arguments, cut
    at 48 characters."""
    bare = kernel.replace("(anonymous namespace)", "").removeprefix("void ").split("(", 1)[0]
    outer = bare.split("<", 1)[0].rsplit("::", 1)[-1] or bare
    words = [w for w in re.findall(r"[A-Za-z_]\w*", bare.partition("<")[2]) if w not in _NOISE]
    functors = [w for w in words if "Functor" in w]
    kernels = [w for w in words if _KERNELISH.search(w) and not w.startswith("gpu_kernel")]
    inner = functors[-1:] or kernels[-1:] or [w for w in words if len(w) >= 8][:1]
    if "elementwise" in outer:
        outer = "elementwise"
    label = (
        outer if not inner else inner[0] if outer.startswith("Kernel") else f"{outer}[{inner[0]}]"
    )
    return label if len(label) <= 48 else label[:47] + "…"
