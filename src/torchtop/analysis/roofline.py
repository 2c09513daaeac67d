"""Where one operator shape stands against the roofline, and why it may stand above it.

The roofline is the datasheet's: the peak for the operator's dtype and the device-memory
bandwidth. Two things put a measured operator above it without any error in the counting. An
fp32 GEMM or convolution faster than the fp32 peak ran in TF32 (PyTorch allows it for
convolutions by default, and for matmuls where the job asked), whose peak is several times
higher. A small operator moving more bytes a second than device memory gives found its operands
in cache (a V100's 6 MB L2 holds a ResNet-50 layer's weights), which the roofline's bandwidth
does not count. Such a fraction is kept as measured, and named, rather than shown as a share.
"""

from __future__ import annotations

from torchtop.analysis.op_cost import OpCost
from torchtop.model.peak import Peak

TF32 = "tf32"
CACHE = "cache"
_TF32_FAMILIES = frozenset({"gemm", "conv", "attention"})


def roofline_fraction(
    cost: OpCost, calls: int, seconds: float, peak_tflops: float | None, bandwidth: float | None
) -> float | None:
    """The roofline's time for the work over the time it took: max(FLOPs / peak, bytes /
    bandwidth) / time, which is achieved TFLOP/s over min(peak, intensity x bandwidth) and,
    for work of no FLOPs (a copy), achieved TB/s over the bandwidth. Only the limits known
    count; None where neither is."""
    limits = []
    if peak_tflops:
        limits.append(cost.flops * calls / (peak_tflops * 1e12))
    if bandwidth:
        limits.append(cost.bytes * calls / (bandwidth * 1e12))
    if not limits or seconds <= 0:
        return None
    return max(limits) / seconds


def above_roofline(
    cost: OpCost, tflops_s: float | None, tb_s: float | None, peak: Peak | None
) -> str | None:
    """Why an operator beat its roofline: TF32 where an fp32 matrix operator's FLOP rate passed
    the fp32 peak, cache where its byte rate passed the bandwidth; None where neither."""
    if peak is None:
        return None
    fp32 = peak.for_dtype("fp32")
    if (
        cost.dtype == "fp32"
        and cost.family in _TF32_FAMILIES
        and fp32
        and tflops_s is not None
        and tflops_s > fp32
    ):
        return TF32
    if peak.tb_s and tb_s is not None and tb_s > peak.tb_s:
        return CACHE
    return None
