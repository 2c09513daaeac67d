"""A fake of the parts of `torch.cuda` the agent's memory probe calls, for GPU-less machines.

Shaped as the real module answers: `memory_stats(device)` a flat `OrderedDict` of int counters
named as PyTorch names them (`allocated_bytes.all.current`, `.peak`, `reserved_bytes.all.current`:
the keys `max_memory_allocated`, `memory_allocated` and `memory_reserved` read), and `{}` before
CUDA is initialised; `reset_peak_memory_stats(device)` returns None and lowers the peaks to the
current figures; `get_device_properties(device)` an object with `name` and `total_memory` (bytes,
an int). The allocator is a caching one: reserved memory grows in 2 MiB blocks and is never
given back. `tests/agent/test_memory_probe.py` checks the names against the installed torch.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

BLOCK_BYTES = 2 * 2**20


@dataclass(frozen=True)
class FakeDeviceProperties:
    name: str
    total_memory: int


class FakeCuda:
    def __init__(self, total_memory: int, name: str = "NVIDIA H100 80GB HBM3") -> None:
        self.properties = FakeDeviceProperties(name, total_memory)
        self.initialized = True
        self.device = 0
        self.allocated = 0
        self.peak = 0
        self.reserved = 0
        self.properties_asked = 0

    # The allocator, as a job's tensors drive it.
    def allocate(self, count: int) -> None:
        self.allocated += count
        self.peak = max(self.peak, self.allocated)
        need = -(-self.allocated // BLOCK_BYTES) * BLOCK_BYTES
        self.reserved = max(self.reserved, need)

    def free(self, count: int) -> None:
        self.allocated -= count

    # torch.cuda's functions.
    def is_initialized(self) -> bool:
        return self.initialized

    def current_device(self) -> int:
        return self.device

    def memory_stats(self, device: int | None = None) -> OrderedDict[str, int]:
        if not self.initialized:
            return OrderedDict()
        return OrderedDict(
            [
                ("allocated_bytes.all.current", self.allocated),
                ("allocated_bytes.all.peak", self.peak),
                ("num_alloc_retries", 0),
                ("reserved_bytes.all.current", self.reserved),
                ("reserved_bytes.all.peak", self.reserved),
            ]
        )

    def reset_peak_memory_stats(self, device: int | None = None) -> None:
        self.peak = self.allocated

    def get_device_properties(self, device: int | None = None) -> FakeDeviceProperties:
        self.properties_asked += 1
        return self.properties
