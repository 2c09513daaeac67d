"""The machine a fix is planned for: its cores, the job's ranks on it, and its shared libraries.

Symbolic values in the rules ("physical cores", "cores / (workers + 1)") become numbers from
here, for one rank: every rank on the node runs its own thread pool, so a rank's share is the
node's cores divided among them (`rank_share`): 2 ranks on 2 cores get 1 each, which is what
torchrun sets (`OMP_NUM_THREADS=1` when it starts more than one rank); 2 threads each made a
nanoGPT DDP job 4-9x slower. A rank that its launcher already confined to fewer cores than the
node's has its share in its own affinity. And an `LD_PRELOAD` fix is offered only for a library
that exists on this machine. The planner takes a `Machine` value, so tests can plan for any
machine; `this_machine()` reads the real one. Physical cores come from Linux's CPU topology
files, as psutil reads them there; psutil is imported only where those are missing, so that
assessing a recorded run (`torchtop view`) loads no process-inspection library.
"""

from __future__ import annotations

import contextlib
import ctypes.util
import functools
import glob
import os
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

LIBRARY_DIRS = ("/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib", "/usr/local/lib", "/lib")


@dataclass(frozen=True)
class Machine:
    logical_cores: int
    physical_cores: int
    libraries: dict[str, str] = field(default_factory=dict)
    """Library stem (`libjemalloc`) -> path, for the preloadable libraries found here."""
    local_ranks: int = 1
    """The job's ranks on this node (its training processes), each with its own thread pool."""

    def library(self, name: str) -> str | None:
        """The path of `name` (`libjemalloc.so`, `jemalloc`, or a path) on this machine."""
        if os.sep in name:
            return name if Path(name).is_file() else None
        return self.libraries.get(_stem(name))


@dataclass(frozen=True)
class RankShare:
    """The cores one rank may count on: logical, and physical (hardware threads once)."""

    cores: int
    physical_cores: int


def rank_share(machine: Machine, allowed_cores: int | None = None) -> RankShare:
    """One rank's part of the node. `allowed_cores` is the rank's own affinity as started:
    fewer than the node's means its launcher confined it, and that set is its share."""
    node = machine.logical_cores
    if allowed_cores is not None and 0 < allowed_cores < node:
        cores = allowed_cores
    else:
        cores = max(1, node // max(1, machine.local_ranks))
    physical = max(1, cores * machine.physical_cores // max(1, node))
    return RankShare(cores, min(physical, cores))


PRELOADABLE = ("libjemalloc", "libtcmalloc", "libtcmalloc_minimal", "libiomp5", "libgomp")


def this_machine(
    find: Callable[[str], str | None] | None = None,
) -> Machine:
    logical = _usable_cores()
    physical = _physical_cores() or logical
    finder = find or find_library
    found = {stem: path for stem in PRELOADABLE if (path := finder(stem)) is not None}
    return Machine(logical, min(physical, logical), found)


@functools.cache
def cached_machine() -> Machine:
    """`this_machine()` once per process: the live loop resolves fixes on every tick."""
    return this_machine()


def find_library(stem: str, extra_dirs: Iterable[str] = ()) -> str | None:
    """A path to `stem.so*` in the usual library folders, this Python's prefix, or ld's cache."""
    folders = [*extra_dirs, str(Path(sys.prefix) / "lib"), *LIBRARY_DIRS]
    for folder in folders:
        base = Path(folder)
        if not base.is_dir():
            continue
        candidates = sorted(base.glob(f"{stem}.so*"))
        if candidates:
            return str(candidates[0])
    name = ctypes.util.find_library(stem.removeprefix("lib"))
    if name is None:
        return None
    for folder in LIBRARY_DIRS:
        if (Path(folder) / name).is_file():
            return str(Path(folder) / name)
    return None


TOPOLOGY = "/sys/devices/system/cpu/cpu[0-9]*/topology/"


def _physical_cores() -> int | None:
    """Cores, each counted once whatever its hardware threads: the distinct sibling lists of
    the topology files (`core_cpus_list`, or its older name), as psutil counts them on Linux."""
    paths = glob.glob(TOPOLOGY + "core_cpus_list") or glob.glob(TOPOLOGY + "thread_siblings_list")
    siblings = set()
    for path in paths:
        with contextlib.suppress(OSError):
            siblings.add(Path(path).read_text(encoding="ascii").strip())
    if siblings:
        return len(siblings)
    import psutil  # elsewhere (no /sys), psutil's own reading

    return psutil.cpu_count(logical=False)


def _usable_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _stem(name: str) -> str:
    base = name if name.startswith("lib") else f"lib{name}"
    return base.split(".so", 1)[0]
