"""The `efficiency` section as JSON, text and Markdown: MFU and the operators on the roofline."""

from __future__ import annotations

import math

import msgspec

from torchtop.model.analysis import RankAnalysis
from torchtop.model.efficiency import Efficiency, OpEfficiency, Unmodelled
from torchtop.model.peak import Peak

TEXT_OPS = 8
"""Operator shapes shown in the text and Markdown reports, the longest first."""
UNMODELLED = 10
"""Unmodelled operators listed in JSON, the longest first."""


def efficiency_json(efficiency: Efficiency) -> dict[str, object]:
    """The contract's `efficiency`: device, peak, flops_per_step, mfu, ops, idle; plus the
    dtype MFU is measured in, the steps and mean step the figures are per, and whose time the
    operators' is ("device": their kernels; "host": a CPU-only trace's operator spans)."""
    return {
        "device": efficiency.device,
        "peak": None if efficiency.peak is None else peak_json(efficiency.peak),
        "flops_per_step": efficiency.flops_per_step,
        "mfu": _number(efficiency.mfu),
        "mfu_dtype": efficiency.mfu_dtype,
        "steps": efficiency.steps,
        "step_mean_ms": None
        if efficiency.step_mean_us is None
        else round(efficiency.step_mean_us / 1000.0, 6),
        "time": efficiency.time_source,
        "ops": [op_json(op) for op in efficiency.ops],
        "idle": None
        if efficiency.idle is None
        else {k: round(v, 6) for k, v in efficiency.idle.items()},
        "modelled_share": _number(efficiency.modelled_share),
        "mfu_is_floor": efficiency.mfu_is_floor,
        "unmodelled": [_unmodelled_json(row, efficiency) for row in efficiency.unmodelled][
            :UNMODELLED
        ],
    }


def _unmodelled_json(row: Unmodelled, efficiency: Efficiency) -> dict[str, object]:
    """One operator's device time left out of the FLOPs; `share` is of all the device time
    launched in the steps, as `modelled_share` is."""
    return {
        "name": row.name,
        "reason": row.reason,
        "time_us": round(row.time_us, 3),
        "share": _number(_device_share(row.time_us, efficiency)),
    }


def _device_share(time_us: float, efficiency: Efficiency) -> float | None:
    modelled = sum(op.time_us for op in efficiency.ops)
    total = modelled + sum(row.time_us for row in efficiency.unmodelled)
    return time_us / total if total > 0 else None


def peak_json(peak: Peak) -> dict[str, object]:
    return {
        "device": peak.device,
        "tflops": dict(peak.tflops),
        "tb_s": peak.tb_s,
        "source": peak.source,
    }


def op_json(op: OpEfficiency) -> dict[str, object]:
    """One operator shape; its arguments as the trace's JSON values (lists)."""
    return {
        "name": op.name,
        "input_dims": _decoded(op.input_dims),
        "input_type": _decoded(op.input_type),
        "concrete_inputs": _decoded(op.concrete_inputs),
        "family": op.family,
        "dtype": op.dtype,
        "calls": op.calls,
        "flops": op.flops,
        "bytes": op.bytes,
        "time_us": round(op.time_us, 3),
        "tflops_s": _number(op.tflops_s),
        "tb_s": _number(op.tb_s),
        "intensity": _number(op.intensity),
        "bound": op.bound,
        "roofline_fraction": _number(op.roofline_fraction),
        "above_roofline": op.above_roofline,
    }


def efficiency_text(job: RankAnalysis) -> list[str]:
    """A short section: MFU against the peak, then the longest operator shapes."""
    efficiency = job.efficiency
    if efficiency is None:
        return []
    lines = ["", f"EFFICIENCY {efficiency.device}", f"  {_headline(efficiency)}"]
    if efficiency.ops:
        lines.append(f"  {'time ms':>9} {'calls':>6} {'TFLOP/s':>8} {'TB/s':>6} {'roof':>6}  op")
    for op in efficiency.ops[:TEXT_OPS]:
        lines.append(
            f"  {op.time_us / 1000.0:9.2f} {op.calls:6d} {_figure(op.tflops_s, 8)} "
            f"{_figure(op.tb_s, 6)} {_roof(op):>6}  {_label(op)}"
        )
    return lines


def efficiency_markdown(job: RankAnalysis) -> list[str]:
    efficiency = job.efficiency
    if efficiency is None:
        return []
    lines = ["## Efficiency", "", f"{efficiency.device}: {_headline(efficiency)}.", ""]
    if efficiency.ops:
        lines += [
            "| operator | shapes | calls | time (ms) | TFLOP/s | TB/s | bound | of roofline |",
            "|---|---|---:|---:|---:|---:|---|---:|",
        ]
        for op in efficiency.ops[:TEXT_OPS]:
            lines.append(
                f"| `{op.name}` | `{_short(op.input_dims, 60)}` | {op.calls} | "
                f"{op.time_us / 1000.0:.2f} | {_figure(op.tflops_s, 0).strip()} | "
                f"{_figure(op.tb_s, 0).strip()} | {op.bound or 'n/a'} | "
                f"{_roof(op)} |"
            )
        lines.append("")
    return lines


def _headline(efficiency: Efficiency) -> str:
    flops = f"{efficiency.flops_per_step / 1e9:,.1f} GFLOP per step modelled"
    if efficiency.mfu is None:
        why = "no peak known for this device" if efficiency.peak is None else "no peak for"
        if efficiency.peak is not None:
            why += f" {efficiency.mfu_dtype or 'its dtype'}"
        return f"MFU n/a ({why}); {flops}"
    peak = efficiency.peak.for_dtype(efficiency.mfu_dtype or "") if efficiency.peak else None
    against = f"of the {efficiency.mfu_dtype} peak ({peak:g} TFLOP/s)"
    if efficiency.mfu_is_floor and efficiency.modelled_share is not None:
        return (
            f"MFU at least {efficiency.mfu:.1%} {against} (FLOPs modelled for "
            f"{efficiency.modelled_share:.0%} of device time{_most_unmodelled(efficiency)}); "
            f"{flops}"
        )
    covered = ""
    if efficiency.modelled_share is not None:
        covered = f" ({efficiency.modelled_share:.0%} of device time)"
    return f"MFU {efficiency.mfu:.1%} {against}; {flops}{covered}"


def _most_unmodelled(efficiency: Efficiency) -> str:
    """The reason that leaves out the most time, and the operators it leaves out most of."""
    by_reason: dict[str, list[Unmodelled]] = {}
    for row in efficiency.unmodelled:
        by_reason.setdefault(row.reason, []).append(row)
    if not by_reason:
        return ""
    reason, rows = max(by_reason.items(), key=lambda kv: sum(r.time_us for r in kv[1]))
    names = ", ".join(row.name for row in rows[:3])
    return f"; left out most: {names} ({reason})"


def _roof(op: OpEfficiency) -> str:
    """The roofline fraction, or what put the operator above it (TF32 ran; cache served)."""
    if op.above_roofline is not None:
        return f">{op.above_roofline}"
    return _share(op.roofline_fraction)


def _label(op: OpEfficiency) -> str:
    return f"{op.name} {_short(op.input_dims, 48)} {op.dtype or ''}".rstrip()


def _figure(value: float | None, width: int) -> str:
    if value is None:
        return "-".rjust(width)
    return f"{value:{width}.1f}" if value >= 10 else f"{value:{width}.2f}"


def _share(value: float | None) -> str:
    return "-" if value is None else f"{value:.0%}"


def _short(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _decoded(text: str) -> object:
    try:
        return msgspec.json.decode(text) if text else None
    except msgspec.DecodeError:
        return text


def _number(value: float | None) -> float | None:
    if value is None or math.isnan(value) or math.isinf(value):
        return None
    return value
