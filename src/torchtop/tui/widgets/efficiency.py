"""How far the job runs from the machine's limit: MFU, the longest operator shapes with the
share of their roofline they reach, and the device's idle time by cause.

From the report's `efficiency` (profiler windows that recorded shapes, or a trace that did);
hidden without it, so the dashboard's layout is unchanged. Compact for the bottom row at 80
columns: the MFU line first, then the idle causes where a GPU trace gave them, then as many
operator shapes as fit, the longest first, each `roof% name shapes TFLOP/s`.
"""

from __future__ import annotations

import json

from rich.console import RenderableType
from rich.text import Text

from torchtop.model.efficiency import Efficiency, OpEfficiency
from torchtop.tui.frame import Frame
from torchtop.tui.palette import MUTED
from torchtop.tui.widgets.panel import Panel, lines_to_text

IDLE_WORDS = (("host_wait", "host"), ("kernel_wait", "launch"), ("other", "other"))
"""The idle causes as `analysis.idle` names them, and as the panel says them."""


def mfu_line(efficiency: Efficiency) -> Text:
    """`MFU 21.2% fp32 of 0.0812 TFLOP/s, 0.20 GFLOP/step` (`MFU ≥0.2%` where it is a floor),
    or why there is no MFU: the figure first, so a narrow panel still shows it."""
    work = f"{efficiency.flops_per_step / 1e9:,.2f} GFLOP/step"
    peak = efficiency.peak.for_dtype(efficiency.mfu_dtype or "") if efficiency.peak else None
    if efficiency.mfu is None or peak is None:
        why = "no peak" if efficiency.peak is None else f"no {efficiency.mfu_dtype} peak"
        line = Text("MFU n/a ", style="bold")
        line.append(f"({why}), {work}", style=MUTED)
        return line
    # A floor where most of the device time ran in operators whose FLOPs are not counted.
    at_least = "≥" if efficiency.mfu_is_floor else ""
    line = Text(f"MFU {at_least}{efficiency.mfu:.1%} ", style="bold")
    line.append(f"{efficiency.mfu_dtype} of {_tflops(peak)} TFLOP/s, {work}", style=MUTED)
    return line


def _tflops(value: float) -> str:
    """989 or 1,307 (a datasheet's figure), 19.5, 0.0812 (a CPU's)."""
    if value >= 100:
        return f"{value:,.0f}"
    return f"{value:.1f}" if value >= 1 else f"{value:.3g}"


def idle_line(idle: dict[str, float]) -> Text:
    """`idle host 12% launch 3% other 1%`: the GPU's idle time in the steps, by cause."""
    line = Text("idle ", style=MUTED)
    line.append(" ".join(f"{word} {idle.get(key, 0.0):.0%}" for key, word in IDLE_WORDS))
    return line


def op_line(op: OpEfficiency) -> Text:
    """`27% mm 192x256,256x320 0.022`: the share of its roofline it reaches, the operator and
    its input shapes, its TFLOP/s (muted: the first to go at the panel's edge)."""
    roof = "-" if op.roofline_fraction is None else f"{op.roofline_fraction:.0%}"
    line = Text(f"{roof:>4} ")
    line.append(op.name.removeprefix("aten::"))
    line.append(f" {compact_dims(op.input_dims)}", style=MUTED)
    if op.tflops_s is not None and op.flops > 0:  # a copy's rate is its bytes, not FLOPs
        line.append(f" {op.tflops_s:.3g}", style=MUTED)
    return line


def compact_dims(dims: str) -> str:
    """`[[192,256],[256,320],[]]` as `192x256,256x320`: the shapes of the tensor inputs."""
    try:
        shapes = json.loads(dims)
    except ValueError:
        return dims
    if not isinstance(shapes, list):
        return dims
    tensors = [s for s in shapes if isinstance(s, list) and s]
    return ",".join("x".join(str(d) for d in shape) for shape in tensors)


class EfficiencyPanel(Panel):
    TITLE = "Efficiency"

    def watch_frame(self, frame: Frame | None) -> None:
        if frame is not None:
            self.display = frame.report.job.efficiency is not None

    def draw(self, frame: Frame, width: int, height: int) -> RenderableType:
        efficiency = frame.report.job.efficiency
        if efficiency is None:
            return Text("no shapes recorded", style=MUTED)
        lines = [mfu_line(efficiency)]
        if efficiency.idle:
            lines.append(idle_line(efficiency.idle))
        lines += [op_line(op) for op in efficiency.ops[: max(height - len(lines), 0)]]
        return lines_to_text(lines, height)
