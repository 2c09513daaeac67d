"""The `gpu` record of samples/gpu.jsonl, read through NVML (nvidia-ml-py's `pynvml` module).

The only module that imports pynvml, and only when a collector starts, so that machines without
an NVIDIA driver never load it. The module can be injected (tests pass a fake). Every reading is
its own NVML call in its own try: a field the driver does not support (NVMLError_NotSupported) or
cannot give right now is None, and the rest of the record is still measured. Each reading names
its `nvidia-smi --query-gpu=` equivalent, so a number can be checked by hand.

NVML reports host pids; inside a container with its own pid namespace the per-process readings
will not match the job's pids and come back empty.
"""

from __future__ import annotations

import importlib
import time
from collections.abc import Callable, Collection
from types import ModuleType
from typing import TypeVar

import msgspec

from torchtop.runs.records import GpuSample, Unavailable

_T = TypeVar("_T")

# nvidia-smi's names for the bits of nvmlDeviceGetCurrentClocksEventReasons (stable NVML ABI).
THROTTLE_REASONS = {
    0x001: "gpu_idle",
    0x002: "applications_clocks_setting",
    0x004: "sw_power_cap",
    0x008: "hw_slowdown",
    0x010: "sync_boost",
    0x020: "sw_thermal_slowdown",
    0x040: "hw_thermal_slowdown",
    0x080: "hw_power_brake_slowdown",
    0x100: "display_clock_setting",
}
_KIB_BYTES = 1024
_MW_PER_W = 1000.0


def throttle_names(mask: int) -> list[str]:
    """The named reasons set in a clocks-event bitmask; unknown bits by their hex value."""
    names = [name for bit, name in THROTTLE_REASONS.items() if mask & bit]
    unknown = mask & ~sum(THROTTLE_REASONS)
    bit = 1
    while unknown >= bit:
        if unknown & bit:
            names.append(f"unknown_{bit:#x}")
        bit <<= 1
    return names


def unavailable(reason: str) -> Unavailable:
    return Unavailable(t=time.time(), reason=reason)


class NvmlCollector:
    """Samples every NVIDIA device, and the job's processes on them."""

    def __init__(self, nvml_module: ModuleType | None = None) -> None:
        self._nvml = nvml_module
        self._handles: list[object] = []
        self._started = False
        self.reason: str | None = None
        self._reported = False
        self._last_seen_us: dict[int, int] = {}

    def start(self) -> str | None:
        """None when NVML is ready, else why it cannot be used (one line, for the user)."""
        if not self._started:
            self._started = True
            self.reason = self._open()
        return self.reason

    def stop(self) -> None:
        if self._nvml is not None and self._handles:
            self._handles = []
            self._safely(self._nvml.nvmlShutdown)

    def sample(self, job_pids: Collection[int] | None = None) -> GpuSample | Unavailable | None:
        """A `gpu` record; the `unavailable` record once when NVML cannot be used, then None.

        `job_pids` limits the per-process rows to the job's tree (None: every process).
        """
        if self.start() is not None:
            if self._reported:
                return None
            self._reported = True
            return unavailable(self.reason or "NVML unavailable")
        devices = [self._device(index, handle) for index, handle in enumerate(self._handles)]
        processes = [
            row
            for index, handle in enumerate(self._handles)
            for row in self._processes(index, handle, job_pids)
        ]
        table = {"kind": "gpu", "t": time.time(), "devices": devices, "processes": processes}
        # Read into the record's schema here: a reading of the wrong type is this module's bug.
        return msgspec.convert(table, GpuSample)

    def _open(self) -> str | None:
        if self._nvml is None:
            try:
                self._nvml = importlib.import_module("pynvml")
            except ImportError:
                return "nvidia-ml-py is not installed (no pynvml module)"
        nvml = self._nvml
        try:
            nvml.nvmlInit()
        except nvml.NVMLError_LibraryNotFound:
            return "NVML library not found (libnvidia-ml.so.1): no NVIDIA driver on this machine"
        except nvml.NVMLError_DriverNotLoaded:
            return "NVIDIA driver not loaded (NVML: Driver Not Loaded)"
        except nvml.NVMLError as error:
            return f"NVML could not start: {error}"
        try:
            count = int(nvml.nvmlDeviceGetCount())
            self._handles = [nvml.nvmlDeviceGetHandleByIndex(i) for i in range(count)]
        except nvml.NVMLError as error:
            self._safely(nvml.nvmlShutdown)
            return f"NVML could not list devices: {error}"
        if not self._handles:
            self._safely(nvml.nvmlShutdown)
            return "no NVIDIA GPU found"
        return None

    @property
    def _module(self) -> ModuleType:
        if self._nvml is None:
            raise RuntimeError("NvmlCollector used before start()")
        return self._nvml

    def _read(self, reading: Callable[[], _T]) -> _T | None:
        """One NVML reading; None when this device or driver cannot give it."""
        try:
            return reading()
        except self._module.NVMLError:
            return None

    def _safely(self, call: Callable[[], object]) -> None:
        self._read(call)

    def _device(self, index: int, handle: object) -> dict[str, object]:
        nvml = self._module
        return {
            "index": index,
            "name": _text(self._read(lambda: nvml.nvmlDeviceGetName(handle))),  # name
            "uuid": _text(self._read(lambda: nvml.nvmlDeviceGetUUID(handle))),  # uuid
            **self._activity(handle),
            **self._memory(handle),
            **self._power(handle),
            **self._pcie(handle),
            "throttle_reasons": self._throttle_reasons(handle),
        }

    def _activity(self, handle: object) -> dict[str, int | None]:
        nvml = self._module
        rates = self._read(lambda: nvml.nvmlDeviceGetUtilizationRates(handle))
        return {
            "utilization_gpu_pct": _int(rates, "gpu"),  # utilization.gpu
            "utilization_memory_pct": _int(rates, "memory"),  # utilization.memory
            "sm_clock_mhz": _int(  # clocks.sm
                self._read(lambda: nvml.nvmlDeviceGetClockInfo(handle, nvml.NVML_CLOCK_SM))
            ),
            "mem_clock_mhz": _int(  # clocks.mem
                self._read(lambda: nvml.nvmlDeviceGetClockInfo(handle, nvml.NVML_CLOCK_MEM))
            ),
        }

    def _memory(self, handle: object) -> dict[str, int | None]:
        nvml = self._module
        memory = self._read(lambda: nvml.nvmlDeviceGetMemoryInfo(handle))
        return {
            "memory_used_bytes": _int(memory, "used"),  # memory.used
            "memory_total_bytes": _int(memory, "total"),  # memory.total
        }

    def _power(self, handle: object) -> dict[str, float | int | None]:
        nvml = self._module
        draw_mw = _int(self._read(lambda: nvml.nvmlDeviceGetPowerUsage(handle)))
        # the limit the driver enforces (the lowest of the board's limits), which is the one
        # that caps clocks, rather than the management limit alone (power.limit)
        limit_mw = _int(self._read(lambda: nvml.nvmlDeviceGetEnforcedPowerLimit(handle)))
        temperature = self._read(
            lambda: nvml.nvmlDeviceGetTemperature(handle, nvml.NVML_TEMPERATURE_GPU)
        )
        return {
            "power_w": None if draw_mw is None else draw_mw / _MW_PER_W,  # power.draw
            "power_limit_w": (  # enforced.power.limit
                None if limit_mw is None else limit_mw / _MW_PER_W
            ),
            "temperature_c": _int(temperature),  # temperature.gpu
        }

    def _pcie(self, handle: object) -> dict[str, int | None]:
        # PCIe throughput has no --query-gpu field: `nvidia-smi dmon -s t` shows it (MB/s).
        nvml = self._module
        return {
            "pcie_tx_bytes_per_s": self._pcie_rate(handle, nvml.NVML_PCIE_UTIL_TX_BYTES),
            "pcie_rx_bytes_per_s": self._pcie_rate(handle, nvml.NVML_PCIE_UTIL_RX_BYTES),
        }

    def _pcie_rate(self, handle: object, counter: int) -> int | None:
        # NVML counts KB/s (KiB) over a 20 ms window
        nvml = self._module
        kib_per_s = _int(self._read(lambda: nvml.nvmlDeviceGetPcieThroughput(handle, counter)))
        return None if kib_per_s is None else kib_per_s * _KIB_BYTES

    def _throttle_reasons(self, handle: object) -> list[str] | None:
        # clocks_event_reasons.active (clocks_throttle_reasons.active before driver 535)
        nvml = self._module
        read = getattr(nvml, "nvmlDeviceGetCurrentClocksEventReasons", None)
        read = read or nvml.nvmlDeviceGetCurrentClocksThrottleReasons
        mask = _int(self._read(lambda: read(handle)))
        return None if mask is None else throttle_names(mask)

    def _processes(
        self, index: int, handle: object, job_pids: Collection[int] | None
    ) -> list[dict[str, object]]:
        memory = self._process_memory(handle)
        sm_util = self._process_sm_util(index, handle)
        pids = sorted(set(memory) | set(sm_util))
        return [
            {
                "pid": pid,
                "device_index": index,
                "memory_used_bytes": memory.get(pid),
                "sm_util_pct": sm_util.get(pid),
            }
            for pid in pids
            if job_pids is None or pid in job_pids
        ]

    def _process_memory(self, handle: object) -> dict[int, int | None]:
        # nvidia-smi --query-compute-apps=pid,used_memory
        nvml = self._module
        try:
            infos = nvml.nvmlDeviceGetComputeRunningProcesses(handle)
        except nvml.NVMLLibraryMismatchError:
            # the unversioned call is newer than this driver's library: ask for the v2 shape
            infos = self._read(lambda: nvml.nvmlDeviceGetComputeRunningProcesses_v2(handle))
        except nvml.NVMLError:
            infos = None
        # usedGpuMemory is None where the driver cannot tell (Windows WDDM)
        return {int(info.pid): _int(info, "usedGpuMemory") for info in infos or []}

    def _process_sm_util(self, index: int, handle: object) -> dict[int, int | None]:
        # `nvidia-smi pmon -s u` (sm %): samples newer than the last ones seen, latest per pid
        nvml = self._module
        since_us = self._last_seen_us.get(index, 0)
        samples = self._read(lambda: nvml.nvmlDeviceGetProcessUtilization(handle, since_us))
        latest: dict[int, tuple[int, int]] = {}
        for item in samples or []:
            stamp_us, pid = int(item.timeStamp), int(item.pid)
            if pid not in latest or stamp_us >= latest[pid][0]:
                latest[pid] = (stamp_us, int(item.smUtil))
        if latest:
            self._last_seen_us[index] = max(stamp for stamp, _ in latest.values())
        return {pid: util for pid, (_, util) in latest.items()}


def _int(value: object, attribute: str | None = None) -> int | None:
    if attribute is not None:
        value = getattr(value, attribute, None)
    return int(value) if isinstance(value, int | float) else None


def _text(value: object) -> str | None:
    if isinstance(value, bytes):
        return value.decode(errors="replace")
    return None if value is None else str(value)
