"""GEMMs too small to fill the device (`rules/gemm-too-small.toml`), from the operators'
recorded shapes (`record_shapes=True`).

A GEMM kernel gives each thread block one tile of the output, and each block runs on one
streaming multiprocessor (SM, or an AMD compute unit). A product whose output splits into fewer
tiles than the device has SMs leaves the rest idle, and takes about as long with more rows until
it fills them. Counted with 64x64 tiles, the smallest a cuBLAS or hipBLASLt GEMM kernel
commonly uses (CUTLASS's and Tensile's smallest tensor-op tiles for bf16/fp16), so that a GEMM
counted small is small whichever kernel ran it; a split-K kernel, which also splits the inner
dimension across blocks, can fill the device anyway, which this does not see.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from torchtop.analysis.launches import Bools, Launches
from torchtop.analysis.vocabulary import median
from torchtop.model.analysis import Metrics
from torchtop.traces.data import NO_ID, TraceData
from torchtop.traces.shapes import decoded

TILE = 64
GEMM_OPERANDS = {
    "aten::mm": (0, 1),
    "aten::addmm": (1, 2),
    "aten::bmm": (0, 1),
    "aten::baddbmm": (1, 2),
    "aten::_scaled_mm": (0, 1),
}
"""The innermost GEMM operators (`linear` and `matmul` call these) and the positions of their
two matrix operands among the recorded `Input Dims`."""


def output_tiles(name: str, dims: Sequence[object]) -> int | None:
    """The 64x64 output tiles of one GEMM call (times its batch), or None where the recorded
    dims do not say."""
    left, right = GEMM_OPERANDS[name]
    if len(dims) <= right:
        return None
    a, b = dims[left], dims[right]
    if not (isinstance(a, list) and isinstance(b, list) and len(a) >= 2 and len(b) >= 2):
        return None
    batch = math.prod(int(d) for d in a[:-2])
    return batch * math.ceil(int(a[-2]) / TILE) * math.ceil(int(b[-1]) / TILE)


def small_gemm_metrics(
    trace: TraceData, launches: Launches, in_steps: Bools, step_us: float
) -> Metrics:
    """The kernel time of GEMMs whose output would not fill the device's SMs even at twice
    its rows (2 x tiles <= SMs), over the step; the GEMMs' kernel time; the median fill of
    the small ones (tiles over SMs)."""
    sms = next((d.sm_count for d in trace.devices if d.sm_count), None)
    if sms is None or len(trace.op_shape) != len(trace.ops):
        return {}
    ops = trace.ops
    codes = {trace.names.index(n): n for n in GEMM_OPERANDS if n in trace.names}
    gemm = np.isin(ops.name, list(codes)) & (trace.op_shape != NO_ID)
    if not gemm.any():
        return {}
    tiles = _tiles_of(trace, np.flatnonzero(gemm), codes)
    small = np.zeros(len(ops), dtype=bool)
    small[np.flatnonzero(gemm)] = (tiles > 0) & (2 * tiles <= sms)
    durations = trace.kernels.dur_us
    in_gemm = launches.inside(ops.start_us[gemm], ops.end_us[gemm], ops.thread[gemm]) & in_steps
    in_small = launches.inside(ops.start_us[small], ops.end_us[small], ops.thread[small])
    chosen = tiles[(tiles > 0) & (2 * tiles <= sms)]
    return {
        "gemm_share": float(durations[in_gemm].sum()) / step_us,
        "small_gemm_share": float(durations[in_small & in_steps].sum()) / step_us,
        "small_gemm_fill": float(median(chosen.astype(np.float64))) / sms if len(chosen) else None,
    }


def _tiles_of(trace: TraceData, indices: np.ndarray, codes: dict[int, str]) -> np.ndarray:
    """Each chosen operator's output tiles (0 where its dims do not say), decoding each
    distinct (operator, shape) pair once."""
    pairs = (
        trace.ops.name[indices].astype(np.int64) * (len(trace.shapes) + 1) + trace.op_shape[indices]
    )
    unique, inverse = np.unique(pairs, return_inverse=True)
    values = np.zeros(len(unique), dtype=np.int64)
    for position, pair in enumerate(unique.tolist()):
        name, shape = divmod(pair, len(trace.shapes) + 1)
        try:
            values[position] = output_tiles(codes[name], decoded(trace.shapes[shape])[0]) or 0
        except (TypeError, ValueError):
            values[position] = 0
    return values[inverse.reshape(-1)]
