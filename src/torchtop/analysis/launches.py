"""Which host range launched each kernel: the launching runtime call's time and thread.

A kernel's correlation id names the runtime call (`cudaLaunchKernel`, `hipLaunchKernel`,
`cuLaunchKernel`) that queued it; that call runs on the host thread inside the operators and
annotations that asked for the kernel, so "the kernels of an operator or of `Optimizer.step`"
are the kernels whose launch lies inside its span on its thread. This holds for nested
operators too (an `aten::matmul` and the `aten::bmm` inside it launch the same kernels), which
the kernels' single external id does not say.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from torchtop.analysis.intervals import IntervalSet
from torchtop.traces.data import NO_ID, Floats, Ints, TraceData

Bools = npt.NDArray[np.bool_]


class Launches:
    """Each kernel's launch instant (NaN where no runtime call matched) and thread (-1)."""

    def __init__(self, trace: TraceData) -> None:
        kernels, runtime = trace.kernels, trace.runtime
        self.at_us: Floats = np.full(len(kernels), np.nan)
        self.thread: Ints = np.full(len(kernels), -1, dtype=np.int64)
        if len(runtime) == 0 or len(kernels) == 0:
            return
        order = np.argsort(runtime.correlation, kind="stable")
        sorted_corr = runtime.correlation[order]
        position = np.minimum(np.searchsorted(sorted_corr, kernels.correlation), len(order) - 1)
        found = (sorted_corr[position] == kernels.correlation) & (kernels.correlation != NO_ID)
        self.at_us[found] = runtime.start_us[order[position[found]]]
        self.thread[found] = runtime.thread[order[position[found]]]

    def inside(self, start_us: Floats, end_us: Floats, thread: Ints) -> Bools:
        """Which kernels were launched inside one of the spans, on the span's own thread."""
        return within(self.at_us, self.thread, start_us, end_us, thread)


def within(at_us: Floats, at_thread: Ints, start_us: Floats, end_us: Floats, thread: Ints) -> Bools:
    """Which instants (`at_us` on `at_thread`; NaN or thread -1: none) lie inside one of the
    spans, on the span's own thread."""
    known = (at_thread >= 0) & np.isfinite(at_us)
    if len(start_us) == 0 or not known.any():
        return np.zeros(len(at_us), dtype=bool)
    # Threads are kept apart by placing each on its own stretch of one time line.
    low = float(min(np.nanmin(at_us), start_us.min()))
    high = float(max(np.nanmax(at_us), end_us.max()))
    scale = (high - low) * 2.0 + 1.0
    spans = IntervalSet.of(thread * scale + start_us - low, thread * scale + end_us - low)
    points = np.where(known, at_thread * scale + at_us - low, -1.0)
    return spans.contains(points) & known
