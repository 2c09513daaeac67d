"""How far the job's operators are from the machine's limit: FLOPs, roofline, MFU (issue 32).

Built by `analysis.efficiency` from the shapes a trace recorded, the operators' costs
(`analysis.op_cost`) and the device's datasheet peak (`analysis.peaks`); the report's
`efficiency` section is this, per rank and for the job.
"""

from __future__ import annotations

import msgspec

from torchtop.model.peak import Peak


class OpEfficiency(msgspec.Struct, frozen=True):
    """One operator name and argument shape over the counted steps: its calls, the work of one
    call, the time all of them took, and what that makes against the roofline."""

    name: str
    input_dims: str
    """The trace's `Input Dims`, `Input type` and `Concrete Inputs`, as its JSON text."""
    input_type: str
    concrete_inputs: str
    family: str
    """`op_cost`'s family: gemm, conv, attention, elementwise, norm, softmax, reduction, copy."""
    dtype: str | None
    calls: int
    flops: float
    """Per call."""
    bytes: float
    """Per call: device-memory traffic, each operand read and each result written once."""
    time_us: float
    """All calls together: their device work's summed time (a GPU trace), or the operators'
    own inclusive durations (a CPU-only trace)."""
    tflops_s: float | None = None
    tb_s: float | None = None
    intensity: float | None = None
    """FLOPs per byte."""
    bound: str | None = None
    """"compute" where the intensity reaches the peak's ridge point for its dtype, else
    "memory"; None without a peak to place it."""
    roofline_fraction: float | None = None
    """Achieved TFLOP/s over the roofline at its intensity: min(peak, intensity x bandwidth)."""
    above_roofline: str | None = None
    """Why `roofline_fraction` is over 1, where it is: "tf32" (an fp32 operator faster than the
    fp32 peak, so TF32 ran) or "cache" (more bytes a second than device memory gives, so its
    operands were served from cache); None where it is not over 1."""


class Unmodelled(msgspec.Struct, frozen=True):
    """Device time in the counted steps that no modelled operator accounts for, by the innermost
    operator that launched it and why its FLOPs are not counted."""

    name: str
    reason: str
    """"no Concrete Inputs recorded", "no shapes recorded", "arguments not modelled",
    "not a modelled operator", "outside the modelled operator inside it" or "launched outside
    any operator"."""
    time_us: float


class Efficiency(msgspec.Struct, frozen=True):
    """The report's `efficiency`: the modelled FLOPs per step, MFU against the device's peak,
    every modelled operator shape on the roofline, and the device's idle time by cause."""

    device: str
    peak: Peak | None
    steps: int
    """The steps the operators were counted in."""
    step_mean_us: float | None
    flops_per_step: float
    mfu: float | None
    """flops_per_step / step time / the peak of `mfu_dtype`; None without that peak."""
    mfu_dtype: str | None
    """The compute dtype most of the FLOPs ran in."""
    time_source: str
    """"device" (operators' kernels, copies and memsets) or "host" (a CPU-only trace)."""
    ops: tuple[OpEfficiency, ...] = ()
    """The longest first."""
    idle: dict[str, float] | None = None
    """The device's idle time in the steps as shares of their span: host_wait, kernel_wait,
    other (`analysis.idle`); None on a CPU-only trace."""
    modelled_share: float | None = None
    """The modelled operators' device time over all device work launched in the counted steps
    (theirs plus `unmodelled`'s); None on a CPU-only trace, where it is not measured."""
    mfu_is_floor: bool = False
    """`modelled_share` is under `analysis.coverage.FLOOR_SHARE`: the FLOPs of most of the work
    are not counted, so `mfu` is a lower bound and no more."""
    unmodelled: tuple[Unmodelled, ...] = ()
    """The device time not modelled, by operator and reason, the longest first."""
