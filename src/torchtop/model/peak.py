"""A device's peak throughput: what a job's FLOPs and bytes per second are measured against.

It lives with the shared data types because two layers make one: `analysis/peaks.py` reads the
datasheet table for a GPU, and `collectors/cpu_peak.py` measures a CPU, which sits below the
analysis and may not import it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

DTYPES = ("fp64", "fp32", "tf32", "bf16", "fp16", "fp8", "int8")
"""The compute dtypes a peak may be known for, in `op_cost`'s spelling."""
MEASURED = "measured"
"""The `source` of a peak measured on the machine rather than read from a datasheet."""


@dataclass(frozen=True)
class Peak:
    """Dense peak TFLOP/s per compute dtype (TOPS for int8) and memory bandwidth in TB/s."""

    device: str
    tflops: Mapping[str, float]
    tb_s: float | None
    source: str
    """The datasheet the figures come from, or `MEASURED`."""
    note: str = field(default="", compare=False)
    """Where a figure needs a word: sparsity halved, an ambiguous datasheet, how and when a
    measured peak was taken."""

    def for_dtype(self, dtype: str) -> float | None:
        """The peak for exactly `dtype`, or None where it is not known. No fallback: an fp32
        GEMM runs at the tf32 rate only where the job allowed TF32, and the caller knows that."""
        return self.tflops.get(dtype)
