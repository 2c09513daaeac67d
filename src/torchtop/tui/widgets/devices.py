"""Devices: each GPU's counters as plots over time, then the host: CPU, cores, the job's
processes (main and each DataLoader worker), iowait, disk and network.

On a machine without a GPU the panel says so in one line and the CPU gets the room (a plot
per core when they fit). Samples are the `host` and `gpu` records, newest last.
"""

from __future__ import annotations

from dataclasses import replace

from rich.console import RenderableType

from torchtop.tui.frame import Frame
from torchtop.tui.widgets.gpu import gpu_lines
from torchtop.tui.widgets.host import host_lines
from torchtop.tui.widgets.panel import Panel, lines_to_text


class DevicesPanel(Panel):
    TITLE = "Devices"

    def draw(self, frame: Frame, width: int, height: int) -> RenderableType:
        # One column per sample, newest at the right: older samples would not be seen anyway.
        frame = replace(frame, gpu=frame.gpu[-width:], host=frame.host[-width:])
        gpu = gpu_lines(frame, width, height)
        return lines_to_text(gpu + host_lines(frame, width, height - len(gpu)), height)
