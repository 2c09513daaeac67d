"""The GPU lines of the Devices panel: per device, utilisation, SM clock, memory, power and
PCIe rates as plots over time (the `gpu` records of docs/run-folder.md), or one line each when
the panel is short; one line saying why when there is no GPU."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from rich.text import Text

from torchtop.tui.charts import number, rate, size
from torchtop.tui.frame import Frame, Record
from torchtop.tui.palette import MUTED
from torchtop.tui.widgets.plots import WARM, plot_line, series

HOST_MIN_LINES = 9


def device_field(index: int, name: str) -> Callable[[Record], float | None]:
    def read(record: Record) -> float | None:
        for device in record.get("devices") or ():
            if device.get("index") == index:
                return number(device.get(name))
        return None

    return read


def gpu_lines(frame: Frame, width: int, height: int) -> list[Text]:
    records = frame.gpu
    devices: list[Mapping[str, Any]] = list(records[-1].get("devices") or []) if records else []
    if not devices:
        reason = frame.unavailable.get("gpu") or "no GPU samples yet"
        return [Text.assemble(("GPU   ", "bold"), (f"none · {reason}", MUTED))]
    # A GPU gets six lines only when the host keeps room for its own few lines.
    detailed = len(devices) * 6 <= height - HOST_MIN_LINES
    lines: list[Text] = []
    for device in devices:
        lines += gpu_device(records, device, width, detailed)
    return lines


def gpu_device(records: Sequence[Record], device: Mapping[str, Any], width: int,
               detailed: bool) -> list[Text]:  # fmt: skip
    index = int(device.get("index") or 0)

    def values(name: str) -> list[float | None]:
        return series(records, device_field(index, name))

    util, sm = number(device.get("utilization_gpu_pct")), number(device.get("sm_clock_mhz"))
    used, total = number(device.get("memory_used_bytes")), number(device.get("memory_total_bytes"))
    power, limit = number(device.get("power_w")), number(device.get("power_limit_w"))
    rx, tx = number(device.get("pcie_rx_bytes_per_s")), number(device.get("pcie_tx_bytes_per_s"))
    util_text = f"{util:.0f}%" if util is not None else "n/a"
    if not detailed:
        summary = f"{util_text} SM {sm or 0:.0f}MHz {size(used)}/{size(total)} {power or 0:.0f}W"
        return [plot_line(f"GPU{index}", values("utilization_gpu_pct"), summary, width, 100.0)]
    name = Text(f"GPU{index} ", style="bold")
    name.append(str(device.get("name") or ""), style=MUTED)
    return [
        name,
        plot_line(" util", values("utilization_gpu_pct"), util_text, width, 100.0),
        plot_line(" SM", values("sm_clock_mhz"), f"{sm or 0:.0f} MHz", width, None),
        plot_line(" mem", values("memory_used_bytes"), f"{size(used)} / {size(total)}", width,
                  total, WARM),
        plot_line(" power", values("power_w"), f"{power or 0:.0f} / {limit or 0:.0f} W", width,
                  limit, WARM),
        plot_line(" PCIe", values("pcie_rx_bytes_per_s"), f"rx {rate(rx)} tx {rate(tx)}", width,
                  None),
    ]  # fmt: skip
