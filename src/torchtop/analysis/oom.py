"""Whether a job died of out-of-memory, from the tail of its stderr, and the last peak seen.

PyTorch says so in words: `torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00
GiB (GPU 0; ...)` (older: `torch.cuda.OutOfMemoryError`, `RuntimeError: CUDA out of memory`),
`HIP out of memory` on ROCm, and `DefaultCPUAllocator: can't allocate memory` on the host. The
device named there is matched with the trace's `memory` entries, whose peak (and the operators
holding it) is the last one measured before the job died. Pure: the caller brings the stderr
tail (the job's exit record) and the memory entries (the traces).
"""

from __future__ import annotations

import re

from torchtop.model.memory import DeviceMemory, OutOfMemory

_DEVICE_OOM = re.compile(r"(?:CUDA|HIP) out of memory")
_HOST_OOM = re.compile(r"DefaultCPUAllocator: can't allocate memory|std::bad_alloc")
_GPU_INDEX = re.compile(r"GPU (\d+)|device (\d+)")


def out_of_memory(stderr_tail: str, memory: tuple[DeviceMemory, ...]) -> OutOfMemory | None:
    """The out-of-memory the stderr tail reports, with its device's last peak; None if none."""
    lines = stderr_tail.splitlines()
    for line in reversed(lines):
        if _DEVICE_OOM.search(line) or "OutOfMemoryError" in line:
            return _found(line.strip(), _gpu(line, memory), memory)
        if _HOST_OOM.search(line):
            return _found(line.strip(), "cpu", memory)
    return None


def _gpu(line: str, memory: tuple[DeviceMemory, ...]) -> str | None:
    match = _GPU_INDEX.search(line)
    if match:
        return f"cuda:{match.group(1) or match.group(2)}"
    return next((d.device for d in memory if d.device.startswith("cuda")), None)


def _found(line: str, device: str | None, memory: tuple[DeviceMemory, ...]) -> OutOfMemory:
    entry = next((d for d in memory if d.device == device), None)
    return OutOfMemory(
        message=line[:300],
        device=device,
        last_peak_bytes=entry.peak_allocated_bytes if entry else None,
        top_allocators=entry.top_allocators if entry else (),
    )
