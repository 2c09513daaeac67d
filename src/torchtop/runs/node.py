"""The node (machine) a process runs on: its name, as every part of torchtop spells it, and the
CPUs of it that a process may use.

`TORCHTOP_NODE` wins when set: containers share hostnames, and tests run several "nodes" on one
machine. Otherwise the hostname, as `socket.gethostname()` gives it. One function, so the run
folder, the report and the metrics' `node` label never disagree.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping

NODE_VARIABLE = "TORCHTOP_NODE"


def node_name(env: Mapping[str, str] | None = None) -> str:
    """`TORCHTOP_NODE` when set and not blank, else the hostname."""
    chosen = (os.environ if env is None else env).get(NODE_VARIABLE, "").strip()
    return chosen or socket.gethostname()


def process_cpus(pid: int) -> frozenset[int] | None:
    """The CPUs any thread of `pid` may run on: the union of its threads' affinities.

    One thread's affinity is not the process's: OpenMP with `OMP_PROC_BIND` pins the main
    thread to one core and each pool thread to another, so the union is what the process was
    allowed (for a pool as large as its cores) or at least one core per thread. None where the
    process cannot be read (gone, or no /proc)."""
    cpus: set[int] = set()
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return None
    for tid in tids:
        try:
            cpus |= os.sched_getaffinity(int(tid))
        except (OSError, ValueError):
            continue  # a thread that ended meanwhile
    return frozenset(cpus) or None
