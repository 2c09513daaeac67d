"""Read Kineto (chrome-trace JSON) traces: streaming, `.json`/`.json.gz`, old and new schemas.

The package's names are imported on first use, so that `traces.parallel` can start reading a
file before numpy and the readers are imported (see `parallel.start_early`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from torchtop.traces.discover import find_trace_files
    from torchtop.traces.reader import read_trace

__all__ = ["find_trace_files", "read_trace"]


def __getattr__(name: str) -> Any:
    if name == "read_trace":
        from torchtop.traces.reader import read_trace

        return read_trace
    if name == "find_trace_files":
        from torchtop.traces.discover import find_trace_files

        return find_trace_files
    raise AttributeError(f"module 'torchtop.traces' has no attribute {name!r}")
