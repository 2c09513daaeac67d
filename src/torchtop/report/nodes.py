"""The report's words for a job of several ranks and nodes: a rank's last stack on one line,
and one line per node of a shared run, for the text and Markdown reports (the dashboard draws
its own). Only runs with several ranks or nodes reach here, so other reports do not change."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path

from torchtop.model.report import LastStack, NodeReport, StackLine

LIBRARY_PARTS = ("/site-packages/", "/dist-packages/", "/lib/python3", "/torchtop/agent/")
"""A frame in a file whose path has one of these is not the job's own code."""


def stack_summary(stack: LastStack) -> str:
    """`at HH:MM:SS UTC: inner (file:line) < ... < job_frame (file:line)`: the innermost frame
    and the innermost one in the job's own code (not a library's, not torchtop's)."""
    at = datetime.fromtimestamp(stack.t, UTC).strftime("%H:%M:%S UTC")
    if not stack.frames:
        return f"at {at}: no frames"
    inner = stack.frames[0]
    own = next((i for i, f in enumerate(stack.frames) if _is_job_code(f.file)), None)
    if own is None or own == 0:
        return f"at {at}: {_frame(inner)}"
    gap = " < " if own == 1 else " < ... < "
    return f"at {at}: {_frame(inner)}{gap}{_frame(stack.frames[own])}"


def where_last(stack: LastStack) -> str:
    """`HH:MM:SS job_frame (file:line)`, short for a line on the dashboard: the innermost
    frame in the job's own code (else the innermost frame)."""
    at = datetime.fromtimestamp(stack.t, UTC).strftime("%H:%M:%S")
    own = next((f for f in stack.frames if _is_job_code(f.file)), None)
    frame = own or (stack.frames[0] if stack.frames else None)
    return f"{at} {_frame(frame) if frame is not None else 'no frames'}"


def _is_job_code(file: str | None) -> bool:
    if not file or file.startswith("<"):
        return False
    return not any(part in file for part in LIBRARY_PARTS)


def _frame(frame: StackLine) -> str:
    where = f" ({Path(frame.file).name}:{frame.line})" if frame.file else ""
    return f"{frame.function or '?'}{where}"


def node_fields(node: NodeReport) -> tuple[str, str, str, str, str, str, str]:
    """Name, ranks, host, cpu, memory, gpu and how its job ended (or `running`)."""
    mem = f"{node.mem_used_bytes / 1e9:.1f} GB" if node.mem_used_bytes is not None else "n/a"
    return (
        node.name,
        ",".join(str(r) for r in node.ranks) or "none",
        node.host or "n/a",
        _pct(node.cpu_mean_pct),
        mem,
        _pct(node.gpu_mean_utilization_pct),
        node.ended or "running",
    )


def node_lines(nodes: Iterable[NodeReport]) -> list[str]:
    """One line per node of a shared run, for the text report."""
    lines = []
    for node in nodes:
        name, ranks, host, cpu, mem, gpu, ended = node_fields(node)
        lines.append(
            f"{name:<10} ranks {ranks:<8} host {host:<12} cpu {cpu:>4}  mem {mem:>8}"
            f"  gpu {gpu:>4}  {'ended: ' + ended if node.ended else ended}"
        )
    return lines


def _pct(value: float | None) -> str:
    return f"{value:.0f}%" if value is not None else "n/a"
