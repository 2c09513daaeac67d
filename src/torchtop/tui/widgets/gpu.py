"""The GPU lines of the Devices panel: per device, utilisation, SM clock, memory, power and
PCIe rates as plots over time (the `gpu` records of docs/run-folder.md), or one line each when
the panel is short; one line saying why when there is no GPU."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from rich.text import Text

from torchtop.runs.records import GpuDevice, GpuSample
from torchtop.tui.charts import number, rate, size
from torchtop.tui.frame import Frame
from torchtop.tui.palette import MUTED
from torchtop.tui.widgets.plots import WARM, plot_line, series

HOST_MIN_LINES = 9


DeviceCounter = Callable[[GpuDevice], float | None]


def device_field(index: int, counter: DeviceCounter) -> Callable[[GpuSample], float | None]:
    def read(record: GpuSample) -> float | None:
        for device in record.devices:
            if device.index == index:
                return counter(device)
        return None

    return read


def gpu_lines(frame: Frame, width: int, height: int) -> list[Text]:
    records = frame.gpu
    devices = list(records[-1].devices) if records else []
    if not devices:
        reason = frame.unavailable.get("gpu") or "no GPU samples yet"
        return [Text.assemble(("GPU   ", "bold"), (f"none · {reason}", MUTED))]
    # A GPU gets six lines only when the host keeps room for its own few lines.
    detailed = len(devices) * 6 <= height - HOST_MIN_LINES
    lines: list[Text] = []
    for device in devices:
        lines += gpu_device(records, device, width, detailed)
    return lines


def gpu_device(records: Sequence[GpuSample], device: GpuDevice, width: int,
               detailed: bool) -> list[Text]:  # fmt: skip
    index = device.index

    def values(counter: DeviceCounter) -> list[float | None]:
        return series(records, device_field(index, counter))

    util, sm = number(device.utilization_gpu_pct), number(device.sm_clock_mhz)
    used, total = number(device.memory_used_bytes), number(device.memory_total_bytes)
    power, limit = number(device.power_w), number(device.power_limit_w)
    rx, tx = number(device.pcie_rx_bytes_per_s), number(device.pcie_tx_bytes_per_s)
    util_text = f"{util:.0f}%" if util is not None else "n/a"
    if not detailed:
        summary = f"{util_text} SM {sm or 0:.0f}MHz {size(used)}/{size(total)} {power or 0:.0f}W"
        return [plot_line(f"GPU{index}", values(_utilization), summary, width, 100.0)]
    memory, drawn = values(lambda d: d.memory_used_bytes), values(lambda d: d.power_w)
    pcie = values(lambda d: d.pcie_rx_bytes_per_s)
    name = Text(f"GPU{index} ", style="bold")
    name.append(device.name or "", style=MUTED)
    return [
        name,
        plot_line(" util", values(_utilization), util_text, width, 100.0),
        plot_line(" SM", values(lambda d: d.sm_clock_mhz), f"{sm or 0:.0f} MHz", width, None),
        plot_line(" mem", memory, f"{size(used)} / {size(total)}", width,
                  total, WARM),
        plot_line(" power", drawn, f"{power or 0:.0f} / {limit or 0:.0f} W", width,
                  limit, WARM),
        plot_line(" PCIe", pcie, f"rx {rate(rx)} tx {rate(tx)}", width,
                  None),
    ]  # fmt: skip


def _utilization(device: GpuDevice) -> float | None:
    return device.utilization_gpu_pct
