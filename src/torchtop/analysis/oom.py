"""Whether a job died of out-of-memory, from the tail of its stderr, and the last peak seen.

PyTorch says so in words: `torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00
GiB (GPU 0; ...)` (older: `torch.cuda.OutOfMemoryError`, `RuntimeError: CUDA out of memory`),
`HIP out of memory` on ROCm, and `DefaultCPUAllocator: can't allocate memory` on the host. The
device named there is matched with the trace's `memory` entries, whose peak (and the operators
holding it) is the last one measured before the job died. Live, where the agent measured each
step, the last peak is the newest step's allocator peak on a CUDA device; on the host, the
process's highest resident set (all a CPU job's memory is; the allocator's share of it is not
measured). Pure: the caller brings the stderr tail (the job's exit record) and the memory
entries (the traces' or the agent's).
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
    if entry is None and device == "cpu":
        entry = next((d for d in memory if d.device == "host"), None)
    return OutOfMemory(
        message=line[:300],
        device=device,
        last_peak_bytes=_last_peak(entry),
        top_allocators=entry.top_allocators if entry else (),
        last_peak_of=_peak_of(entry),
    )


def _last_peak(entry: DeviceMemory | None) -> float | None:
    if entry is None:
        return None
    if entry.device != "host" and entry.last_peak_bytes is not None:
        return entry.last_peak_bytes
    return entry.peak_allocated_bytes


def _peak_of(entry: DeviceMemory | None) -> str | None:
    if entry is None:
        return None
    return "resident set" if entry.device == "host" else "allocated"
