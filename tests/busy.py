"""Processes that keep cores busy beside a job under test: other tenants of the machine.

`busy_processes(n)` starts `n` plain Python loops (`while True: pass`: one core each, no torch,
nothing torchtop knows) and always kills them when the block ends, however it ends. They are
children of the test process, never of the torchtop it runs, as another user's jobs would be.
`contended_count()` is how many make every core of this machine contended: two on the 2-core
machines the suite is sized for, and no fewer than the cores elsewhere (at most 8).
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Iterator

BUSY_LOOP = "while True: pass"


@contextlib.contextmanager
def busy_processes(count: int) -> Iterator[list[int]]:
    """`count` busy loops running while the block runs; their pids."""
    started: list[subprocess.Popen[bytes]] = []
    try:
        for _ in range(count):
            started.append(subprocess.Popen([sys.executable, "-c", BUSY_LOOP]))
        yield [p.pid for p in started]
    finally:
        for process in started:
            process.kill()
        for process in started:
            process.wait()


def contended_count() -> int:
    return max(2, min(os.cpu_count() or 2, 8))
