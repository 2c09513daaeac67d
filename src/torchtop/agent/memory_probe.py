"""Memory at each step end, inside the job: the process's resident set and, where the job uses
CUDA, the caching allocator's peak of the step.

Cheap on purpose, since it runs on the step's hot path. The RSS is one `pread` of
`/proc/self/statm` (psutil reads the same file for `memory_info().rss`), through a descriptor
kept open and reopened after a fork (a child's `/proc/self` is not its parent's). The CUDA
figures are host-side counters of PyTorch's allocator (`memory_stats`, no device sync) and a
`reset_peak_memory_stats`, so each step's peak is its own. CUDA is read only where the job has
already initialised it: asking a CPU job would create a CUDA context in it. The capacity is
asked once per device.

At most one reading each `READ_EVERY_S`: a step shorter than that (a small model, a fast card)
gets no figures, and the next reading's peak covers every step since the last (the peak is reset
only when read), so the run's peak stays exact while the cost stays under 20 readings a second
(about 15 us each for the RSS on a loaded 2-core machine).

The CUDA branch takes a module-like object (`torch.cuda`, or a test's fake of it), so it can be
tested without a GPU.
"""

from __future__ import annotations

import os
import sys
from typing import Any, Protocol

STATM = "/proc/self/statm"
PEAK_KEY = "allocated_bytes.all.peak"
ALLOCATED_KEY = "allocated_bytes.all.current"
RESERVED_KEY = "reserved_bytes.all.current"
READ_EVERY_S = 0.05


class CudaLike(Protocol):
    """What the probe calls of `torch.cuda`."""

    def is_initialized(self) -> bool: ...

    def current_device(self) -> int: ...

    def memory_stats(self, device: int) -> dict[str, Any]: ...

    def reset_peak_memory_stats(self, device: int) -> None: ...

    def get_device_properties(self, device: int) -> Any: ...


def cuda_figures(cuda: CudaLike, capacities: dict[int, int | None]) -> dict[str, int | None]:
    """The step's CUDA figures from the allocator's counters, the peak reset for the next
    step; {} where the job has not initialised CUDA. `capacities` caches each device's
    memory (`get_device_properties(i).total_memory`), asked once."""
    if not cuda.is_initialized():
        return {}
    device = cuda.current_device()
    stats = cuda.memory_stats(device)
    cuda.reset_peak_memory_stats(device)
    if device not in capacities:
        capacities[device] = int(cuda.get_device_properties(device).total_memory)
    return {
        "cuda_device": device,
        "cuda_peak_allocated_bytes": _count(stats.get(PEAK_KEY)),
        "cuda_allocated_bytes": _count(stats.get(ALLOCATED_KEY)),
        "cuda_reserved_bytes": _count(stats.get(RESERVED_KEY)),
        "cuda_capacity_bytes": capacities[device],
    }


def _count(value: object) -> int | None:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


class MemoryProbe:
    """Reads the figures above at each step end; a part that fails is switched off (None)."""

    def __init__(self, cuda: CudaLike | None = None) -> None:
        """`cuda`: the module to ask (a test's fake); by default the job's `torch.cuda`, where
        it imported it."""
        self._given = cuda
        self._fd: int | None = None
        self._fd_pid = 0
        self._page_bytes = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
        self._rss_broken = not os.path.exists(STATM)
        self._cuda_broken = False
        self._capacities: dict[int, int | None] = {}
        self._capacity_said: set[int] = set()
        self._read_s: float | None = None

    def read(self, now_s: float | None = None) -> dict[str, int | None]:
        """The step's figures: `rss_bytes`, and the CUDA ones where CUDA is in use; {} where
        the last reading was under `READ_EVERY_S` before `now_s` (perf_counter seconds)."""
        if now_s is not None:
            if self._read_s is not None and now_s - self._read_s < READ_EVERY_S:
                return {}
            self._read_s = now_s
        figures: dict[str, int | None] = {}
        rss = self.rss_bytes()
        if rss is not None:
            figures["rss_bytes"] = rss
        cuda = self._cuda()
        if cuda is not None:
            try:
                figures.update(self._capacity_once(cuda_figures(cuda, self._capacities)))
            except Exception:
                self._cuda_broken = True
        return figures

    def rss_bytes(self) -> int | None:
        if self._rss_broken:
            return None
        try:
            pid = os.getpid()
            if self._fd is None or self._fd_pid != pid:
                if self._fd is not None:
                    os.close(self._fd)  # the parent's, inherited by a fork
                self._fd, self._fd_pid = os.open(STATM, os.O_RDONLY), pid
            return int(os.pread(self._fd, 128, 0).split()[1]) * self._page_bytes
        except (OSError, ValueError, IndexError):
            self._rss_broken = True
            return None

    def _cuda(self) -> CudaLike | None:
        if self._cuda_broken:
            return None
        if self._given is not None:
            return self._given
        # Never imported here: a job that did not import torch.cuda does not use it.
        module: CudaLike | None = sys.modules.get("torch.cuda")
        return module

    def _capacity_once(self, figures: dict[str, int | None]) -> dict[str, int | None]:
        """The capacity is written with the device's first step only (the reader keeps it)."""
        device = figures.get("cuda_device")
        if device is None or device in self._capacity_said:
            figures.pop("cuda_capacity_bytes", None)
        else:
            self._capacity_said.add(device)
        return figures
