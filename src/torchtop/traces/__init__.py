"""Read Kineto (chrome-trace JSON) traces: streaming, `.json`/`.json.gz`, old and new schemas."""

from torchtop.traces.discover import find_trace_files
from torchtop.traces.reader import read_trace

__all__ = ["find_trace_files", "read_trace"]
