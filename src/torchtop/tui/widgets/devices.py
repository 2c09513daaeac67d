"""Devices: each GPU's counters as plots over time, then the host: CPU, cores, the job's
processes (main and each DataLoader worker), iowait, disk and network.

On a machine without a GPU the panel says so in one line and the CPU gets the room (a plot
per core when they fit). Samples are the `host` and `gpu` records, newest last.
"""

from __future__ import annotations

from dataclasses import replace
from typing import ClassVar

from rich.console import RenderableType
from rich.text import Text
from textual.binding import Binding, BindingType

from torchtop.tui.frame import Frame
from torchtop.tui.widgets.gpu import gpu_lines
from torchtop.tui.widgets.host import host_lines
from torchtop.tui.widgets.listpanel import RowChosen
from torchtop.tui.widgets.panel import Panel, lines_to_text

WHOLE_LINES = 60
"""Enter shows the panel drawn this tall: every process and core, none summarised."""


class DevicesPanel(Panel, can_focus=True):
    """Fitted to its height (processes summarised, cores on one line when short); Enter shows
    it whole, every process and core on its own line."""

    TITLE = "Devices"
    BINDINGS: ClassVar[list[BindingType]] = [Binding("enter", "whole", "Whole panel")]

    def action_whole(self) -> None:
        if self.frame is not None:
            width = max(self.content_size.width, 40)
            whole = self.draw(self.frame, width, WHOLE_LINES)
            plain = whole.plain if isinstance(whole, Text) else str(whole)
            self.post_message(RowChosen(self.TITLE, plain.rstrip()))

    def draw(self, frame: Frame, width: int, height: int) -> RenderableType:
        # One column per sample, newest at the right: older samples would not be seen anyway.
        frame = replace(frame, gpu=frame.gpu[-width:], host=frame.host[-width:])
        gpu = gpu_lines(frame, width, height)
        return lines_to_text(gpu + host_lines(frame, width, height - len(gpu)), height)
