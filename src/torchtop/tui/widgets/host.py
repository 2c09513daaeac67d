"""The host lines of the Devices panel: CPU, the job's processes (the main process and each
DataLoader worker), per-core load, iowait, disk, network and memory (the `host` records of
docs/run-folder.md), fitted to the rows the GPUs leave."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from rich.text import Text

from torchtop.runs.records import HostProcess, HostSample
from torchtop.tui.charts import meter, number, rate, size, sparkline
from torchtop.tui.frame import Frame
from torchtop.tui.palette import MUTED
from torchtop.tui.widgets.plots import BUSY, WARM, percent, plot_line, series

CORE_CELL = 16


def host_lines(frame: Frame, width: int, height: int) -> list[Text]:
    """CPU, the job's processes, the cores, then disk, network and memory, fitted to `height`:
    processes are summarised and cores drawn in one line before anything is left out."""
    records = frame.host
    if not records:
        reason = frame.unavailable.get("host") or "no host samples yet"
        return [Text.assemble(("CPU   ", "bold"), (reason, MUTED))]
    last = records[-1]
    cpu = number(last.cpu_pct)
    head = [plot_line("CPU", series(records, lambda r: r.cpu_pct), percent(cpu), width, 100.0)]
    if height >= 14:
        iowait = series(records, lambda r: r.iowait_pct)
        head.append(plot_line("iowait", iowait, percent(iowait[-1]), width, 100.0, WARM))
    else:
        head[0].append(f" io {percent(number(last.iowait_pct))}")
    io = io_lines(last, split=height >= 12)
    processes = process_lines(last.processes, width)
    room = max(height - len(head) - len(io) - 1, 1)
    if len(processes) > room:
        processes = [*processes[: room - 1], summary_line(last.processes, room)]
    lines = head + processes
    rows = max(height - len(lines) - len(io), 1)
    cores = last.per_cpu_pct or []
    if len(cores) <= rows and len(records) > 1:
        lines += core_plots(records, len(cores), width)
    else:
        lines += core_lines(cores, width, rows)
    return lines + io


def summary_line(processes: Sequence[HostProcess], room: int) -> Text:
    """The processes that did not fit, as counts and mean CPU per role."""
    skipped = 0 if room == 1 else room - 1
    roles: dict[str, list[float]] = {}
    for process in sorted(processes, key=lambda p: (p.role != "main", p.pid)):
        if process.role in ("main", "worker"):
            roles.setdefault(process.role, []).append(number(process.cpu_pct) or 0)
    parts, seen = [], 0
    for role, loads in roles.items():
        rest = loads[max(skipped - seen, 0) :]
        seen += len(loads)
        if rest:
            parts.append(f"{role} ×{len(rest)} {sum(rest) / len(rest):.0f}%")
    return Text(("+ " if skipped else "") + " · ".join(parts), style=MUTED)


def process_lines(processes: Sequence[HostProcess], width: int) -> list[Text]:
    """The main process and each DataLoader worker: CPU (100% is one core) and memory."""
    shown = [p for p in processes if p.role in ("main", "worker")]
    shown.sort(key=lambda p: (p.role != "main", p.pid))
    bar = max(min(width - 31, 30), 4)
    lines = []
    for process in shown:
        cpu = number(process.cpu_pct)
        line = Text(f"{process.role or '':<6}", style="bold")
        line.append(f"{process.pid:>7} ")
        line.append_text(meter(min(cpu, 100.0) if cpu is not None else None, bar, BUSY))
        line.append(f" {cpu:4.0f}%" if cpu is not None else "  n/a")
        line.append(f" {size(number(process.rss_bytes))}", style=MUTED)
        lines.append(line)
    return lines


def core_plots(records: Sequence[HostSample], cores: int, width: int) -> list[Text]:
    """With room to spare (no GPU, a tall terminal), each core's load over time."""

    def core(index: int) -> Callable[[HostSample], float | None]:
        def read(record: HostSample) -> float | None:
            values = record.per_cpu_pct or []
            return values[index] if index < len(values) else None

        return read

    plots = []
    for index in range(cores):
        values = series(records, core(index))
        plots.append(plot_line(f"cpu{index}", values, percent(values[-1]), width, 100.0))
    return plots


def core_lines(per_cpu: Sequence[object], width: int, rows: int) -> list[Text]:
    """One meter per core in as many columns as fit; one sparkline row when they do not."""
    cores = [number(v) for v in per_cpu]
    columns = max(min(len(cores), width // CORE_CELL), 1)
    if len(cores) > columns * rows:
        line = Text("cores ", style="bold")
        line.append_text(sparkline(cores, min(len(cores), width - 6), top=100.0, style=BUSY))
        return [line]
    cell = min(width // columns, 2 * CORE_CELL)
    lines = []
    for start in range(0, len(cores), columns):
        line = Text()
        for index, pct in enumerate(cores[start : start + columns], start):
            line.append(f"{index:>3} ", style=MUTED)
            line.append_text(meter(pct, cell - 10, BUSY))
            line.append(f" {percent(pct):>4} ")
        lines.append(line)
    return lines


def io_lines(record: HostSample, split: bool) -> list[Text]:
    """Disk, network and memory: a line each when there is room, else one short line."""
    disk_r, disk_w = number(record.disk_read_bytes_per_s), number(record.disk_write_bytes_per_s)
    net_in, net_out = number(record.net_recv_bytes_per_s), number(record.net_sent_bytes_per_s)
    used, total = number(record.mem_used_bytes), number(record.mem_total_bytes)
    if not split:
        line = Text("disk ", style="bold")
        line.append(f"r {short(disk_r)} w {short(disk_w)} ")
        line.append("net ", style="bold")
        line.append(f"↓ {short(net_in)} ↑ {short(net_out)}")
        return [line]
    return [
        Text.assemble(("disk  ", "bold"), f"r {rate(disk_r)}  w {rate(disk_w)}"),
        Text.assemble(("net   ", "bold"), f"↓ {rate(net_in)}  ↑ {rate(net_out)}"),
        Text.assemble(("mem   ", "bold"), f"{size(used)} / {size(total)}"),
    ]


def short(bytes_per_s: float | None) -> str:
    """`37M`, `250k`: a rate per second in four characters or so, for narrow panels."""
    if bytes_per_s is None:
        return "n/a"
    for unit, scale in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if bytes_per_s >= scale:
            value = bytes_per_s / scale
            return f"{value:.0f}{unit}" if value >= 10 else f"{value:.1f}{unit}"
    return f"{bytes_per_s:.0f}"
