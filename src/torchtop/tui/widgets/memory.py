"""Memory per device from the trace's `[memory]` events or the agent's step-end readings: the
allocated curve (live: each step's peak; the host's resident set), the peak and where in the
step it falls, the headroom, NVML's reading beside, and the operators holding the peak.

Shown only when the report has a device's memory (a trace recorded with `profile_memory=True`,
or a live CUDA job whose agent read its allocator); otherwise hidden, so the dashboard's layout
is unchanged: a live CPU job's resident set alone is already in the Devices panel.
"""

from __future__ import annotations

from rich.console import RenderableType
from rich.text import Text

from torchtop.model.memory import DeviceMemory
from torchtop.tui.charts import size, sparkline
from torchtop.tui.frame import Frame
from torchtop.tui.palette import MUTED
from torchtop.tui.widgets.panel import Panel, lines_to_text


def device_lines(device: DeviceMemory, width: int) -> list[Text]:
    """The device's peak, its curve, its headroom, then who holds the peak."""
    where = device.device if device.rank is None else f"{device.device} r{device.rank}"
    head = Text(f"{where} ", style="bold")
    what = "RSS peak" if device.device == "host" else "peak"
    head.append(f"{what} {size(device.peak_allocated_bytes)}")
    if device.peak_phase is not None:
        head.append(f" in {device.peak_phase}", style=MUTED)
    elif device.peak_step is not None:
        head.append(f" at step {device.peak_step}", style=MUTED)
    lines = [head]
    curve = [point[1] for point in device.curve]
    if curve:
        lines.append(sparkline(curve, width, top=device.peak_allocated_bytes))
    if device.headroom_bytes is not None:
        fits = device.batch_factor_max
        line = Text(f"headroom {size(device.headroom_bytes)}", style=MUTED)
        if fits is not None:
            line.append(f", batch up to {fits:.1f}x fits" if fits < 100 else ", batch >100x fits")
        lines.append(line)
    if device.nvml_used_peak_bytes is not None:
        lines.append(Text(f"NVML used {size(device.nvml_used_peak_bytes)}", style=MUTED))
    for holder in device.top_allocators:
        if holder.alive_at_peak_bytes <= 0:
            break
        line = Text(f"{size(holder.alive_at_peak_bytes):>9} ", style=MUTED)
        line.append(holder.name)
        lines.append(line)
    return lines


class MemoryPanel(Panel):
    TITLE = "Memory"

    def watch_frame(self, frame: Frame | None) -> None:
        if frame is not None:
            # A live CPU job's only entry is its resident set, which the Devices panel already
            # shows beside the process: no third panel in the bottom row for it at 80 columns.
            memory = frame.report.job.memory
            self.display = any(d.device != "host" for d in memory)

    def draw(self, frame: Frame, width: int, height: int) -> RenderableType:
        lines: list[Text] = []
        # Devices before the host: the GPU's memory is what limits the batch.
        for device in sorted(frame.report.job.memory, key=lambda d: d.device == "cpu"):
            lines += device_lines(device, width)
        return lines_to_text(lines, height)
