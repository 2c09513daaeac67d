"""A fake `pynvml` (nvidia-ml-py) with configurable devices and failures, for GPU-less machines.

`fake_pynvml(devices)` builds a fresh module object that has the real module's function names,
constants, return shapes (ctypes structures with the real `_fields_`, friendly objects for
process lists) and error classes: `NVMLError(code)` turns into the subclass for that code
(`NVMLError(3)` is an `NVMLError_NotSupported`), exactly as pynvml generates them.
`test_fake_pynvml.py` checks all of that against the installed pynvml.

A device fails a reading by naming the pynvml function in `FakeDevice.errors` with an error
code; `init_error` fails `nvmlInit` (e.g. `NVML_ERROR_LIBRARY_NOT_FOUND` on a machine without
a driver).
"""

from __future__ import annotations

import string
import sys
import types
from ctypes import Structure, c_uint, c_ulonglong
from dataclasses import dataclass, field
from typing import Any

NVML_SUCCESS = 0
NVML_ERROR_UNINITIALIZED = 1
NVML_ERROR_NOT_SUPPORTED = 3
NVML_ERROR_NO_PERMISSION = 4
NVML_ERROR_NOT_FOUND = 6
NVML_ERROR_INSUFFICIENT_SIZE = 7
NVML_ERROR_DRIVER_NOT_LOADED = 9
NVML_ERROR_LIBRARY_NOT_FOUND = 12
NVML_ERROR_FUNCTION_NOT_FOUND = 13
NVML_ERROR_GPU_IS_LOST = 15
NVML_ERROR_UNKNOWN = 999

NVML_CLOCK_GRAPHICS = 0
NVML_CLOCK_SM = 1
NVML_CLOCK_MEM = 2
NVML_TEMPERATURE_GPU = 0
NVML_PCIE_UTIL_TX_BYTES = 0
NVML_PCIE_UTIL_RX_BYTES = 1

nvmlClocksEventReasonGpuIdle = 0x001
nvmlClocksEventReasonSwPowerCap = 0x004
nvmlClocksEventReasonHwSlowdown = 0x008
nvmlClocksEventReasonSwThermalSlowdown = 0x020
nvmlClocksEventReasonHwThermalSlowdown = 0x040


class NVMLLibraryMismatchError(Exception):
    pass


class NVMLError(Exception):
    """As pynvml's: constructing it with a code gives the subclass for that code."""

    _valClassMapping: dict[int, type[NVMLError]] = {}  # noqa: RUF012 (pynvml's own name)
    value: int

    def __new__(cls, value: int) -> NVMLError:
        if cls is NVMLError:
            cls = NVMLError._valClassMapping.get(value, cls)
        error = Exception.__new__(cls)
        error.value = value
        return error

    def __str__(self) -> str:
        return _MESSAGES.get(self.value, f"NVML Error with code {self.value}")


_MESSAGES = {
    NVML_ERROR_NOT_SUPPORTED: "Not Supported",
    NVML_ERROR_NO_PERMISSION: "Insufficient Permissions",
    NVML_ERROR_NOT_FOUND: "Not Found",
    NVML_ERROR_DRIVER_NOT_LOADED: "Driver Not Loaded",
    NVML_ERROR_LIBRARY_NOT_FOUND: "NVML Shared Library Not Found",
    NVML_ERROR_GPU_IS_LOST: "GPU is lost",
    NVML_ERROR_UNKNOWN: "Unknown Error",
}


def _error_classes() -> dict[str, type[NVMLError]]:
    """NVMLError_<CapWords> for each NVML_ERROR_* code, named as pynvml names them."""
    classes: dict[str, type[NVMLError]] = {}
    for name, code in list(globals().items()):
        if not name.startswith("NVML_ERROR_"):
            continue
        words = string.capwords(name.removeprefix("NVML_ERROR_"), "_").replace("_", "")

        def new(cls: type[NVMLError], *args: object, _code: int = code) -> NVMLError:
            return NVMLError.__new__(cls, _code)

        error_class = type(f"NVMLError_{words}", (NVMLError,), {"__new__": new})
        error_class.__module__ = __name__
        NVMLError._valClassMapping[code] = error_class
        classes[error_class.__name__] = error_class
    return classes


ERROR_CLASSES = _error_classes()
globals().update(ERROR_CLASSES)


class c_nvmlUtilization_t(Structure):
    _fields_ = [("gpu", c_uint), ("memory", c_uint)]


class c_nvmlMemory_t(Structure):
    _fields_ = [("total", c_ulonglong), ("free", c_ulonglong), ("used", c_ulonglong)]


class c_nvmlProcessUtilizationSample_t(Structure):
    _fields_ = [
        ("pid", c_uint),
        ("timeStamp", c_ulonglong),
        ("smUtil", c_uint),
        ("memUtil", c_uint),
        ("encUtil", c_uint),
        ("decUtil", c_uint),
    ]


class nvmlFriendlyObject:
    """What pynvml returns for each running process: attributes pid, usedGpuMemory, ..."""

    def __init__(self, dictionary: dict[str, Any]) -> None:
        for key, value in dictionary.items():
            setattr(self, key, value)


@dataclass
class FakeDevice:
    """One GPU's readings, in NVML's own units (MHz, bytes, milliwatts, KB/s)."""

    name: str = "NVIDIA H100 80GB HBM3"
    uuid: str = "GPU-00000000-1111-2222-3333-444444444444"
    utilization_gpu: int = 87
    utilization_memory: int = 41
    sm_clock_mhz: int = 1980
    mem_clock_mhz: int = 2619
    memory_used: int = 40 * 2**30
    memory_total: int = 80 * 2**30
    power_mw: int = 350_500
    power_limit_mw: int = 700_000
    temperature_c: int = 61
    pcie_tx_kib_per_s: int = 2_000
    pcie_rx_kib_per_s: int = 500_000
    clocks_event_mask: int = 0
    # (pid, usedGpuMemory or None)
    processes: list[tuple[int, int | None]] = field(default_factory=list)
    # (pid, timeStamp in µs, smUtil)
    process_samples: list[tuple[int, int, int]] = field(default_factory=list)
    # pynvml function name -> NVML error code it raises
    errors: dict[str, int] = field(default_factory=dict)


class _Handle:
    """Opaque, as pynvml's c_nvmlDevice_t is to its callers."""

    def __init__(self, device: FakeDevice) -> None:
        self.device = device


def fake_pynvml(
    devices: list[FakeDevice] | None = None, *, init_error: int | None = None
) -> types.ModuleType:
    """A module object that answers like pynvml would on a machine with these devices."""
    module = types.ModuleType("pynvml")
    this = sys.modules[__name__]
    for name in dir(this):
        if name.startswith(("NVML", "nvmlClocks", "c_nvml", "nvmlFriendly")):
            setattr(module, name, getattr(this, name))
    calls = _FakeCalls(list(devices or []), init_error)
    for name in dir(calls):
        if name.startswith("nvml"):
            setattr(module, name, getattr(calls, name))
    module.calls = calls  # type: ignore[attr-defined]
    return module


class _FakeCalls:
    """The pynvml functions the collector uses, over the configured devices."""

    def __init__(self, devices: list[FakeDevice], init_error: int | None) -> None:
        self.devices = devices
        self.init_error = init_error
        self.initialized = False
        self.shutdowns = 0

    def _check(self, handle: _Handle, function: str) -> FakeDevice:
        if not self.initialized:
            raise NVMLError(NVML_ERROR_UNINITIALIZED)
        code = handle.device.errors.get(function)
        if code is not None:
            raise NVMLError(code)
        return handle.device

    def nvmlInit(self) -> None:
        if self.init_error is not None:
            raise NVMLError(self.init_error)
        self.initialized = True

    def nvmlShutdown(self) -> None:
        if not self.initialized:
            raise NVMLError(NVML_ERROR_UNINITIALIZED)
        self.initialized = False
        self.shutdowns += 1

    def nvmlDeviceGetCount(self) -> int:
        if not self.initialized:
            raise NVMLError(NVML_ERROR_UNINITIALIZED)
        return len(self.devices)

    def nvmlDeviceGetHandleByIndex(self, index: int) -> _Handle:
        if not self.initialized:
            raise NVMLError(NVML_ERROR_UNINITIALIZED)
        return _Handle(self.devices[index])

    def nvmlDeviceGetName(self, handle: _Handle) -> str:
        return self._check(handle, "nvmlDeviceGetName").name

    def nvmlDeviceGetUUID(self, handle: _Handle) -> str:
        return self._check(handle, "nvmlDeviceGetUUID").uuid

    def nvmlDeviceGetUtilizationRates(self, handle: _Handle) -> c_nvmlUtilization_t:
        device = self._check(handle, "nvmlDeviceGetUtilizationRates")
        return c_nvmlUtilization_t(gpu=device.utilization_gpu, memory=device.utilization_memory)

    def nvmlDeviceGetClockInfo(self, handle: _Handle, type: int) -> int:
        device = self._check(handle, "nvmlDeviceGetClockInfo")
        return {NVML_CLOCK_SM: device.sm_clock_mhz, NVML_CLOCK_MEM: device.mem_clock_mhz}[type]

    def nvmlDeviceGetMemoryInfo(self, handle: _Handle, version: int | None = None) -> Any:
        device = self._check(handle, "nvmlDeviceGetMemoryInfo")
        free = device.memory_total - device.memory_used
        return c_nvmlMemory_t(total=device.memory_total, free=free, used=device.memory_used)

    def nvmlDeviceGetPowerUsage(self, handle: _Handle) -> int:
        return self._check(handle, "nvmlDeviceGetPowerUsage").power_mw

    def nvmlDeviceGetEnforcedPowerLimit(self, handle: _Handle) -> int:
        return self._check(handle, "nvmlDeviceGetEnforcedPowerLimit").power_limit_mw

    def nvmlDeviceGetTemperature(self, handle: _Handle, sensor: int) -> int:
        return self._check(handle, "nvmlDeviceGetTemperature").temperature_c

    def nvmlDeviceGetPcieThroughput(self, device: _Handle, counter: int) -> int:
        fake = self._check(device, "nvmlDeviceGetPcieThroughput")
        by_counter = {
            NVML_PCIE_UTIL_TX_BYTES: fake.pcie_tx_kib_per_s,
            NVML_PCIE_UTIL_RX_BYTES: fake.pcie_rx_kib_per_s,
        }
        return by_counter[counter]

    def nvmlDeviceGetCurrentClocksEventReasons(self, handle: _Handle) -> int:
        return self._check(handle, "nvmlDeviceGetCurrentClocksEventReasons").clocks_event_mask

    def nvmlDeviceGetCurrentClocksThrottleReasons(self, handle: _Handle) -> int:
        return self._check(handle, "nvmlDeviceGetCurrentClocksThrottleReasons").clocks_event_mask

    def nvmlDeviceGetComputeRunningProcesses(self, handle: _Handle) -> list[nvmlFriendlyObject]:
        device = self._check(handle, "nvmlDeviceGetComputeRunningProcesses")
        return [
            nvmlFriendlyObject(
                {"pid": pid, "usedGpuMemory": used, "gpuInstanceId": 0, "computeInstanceId": 0}
            )
            for pid, used in device.processes
        ]

    def nvmlDeviceGetProcessUtilization(
        self, handle: _Handle, timeStamp: int
    ) -> list[c_nvmlProcessUtilizationSample_t]:
        device = self._check(handle, "nvmlDeviceGetProcessUtilization")
        samples = [
            c_nvmlProcessUtilizationSample_t(pid=pid, timeStamp=stamp, smUtil=sm, memUtil=0)
            for pid, stamp, sm in device.process_samples
            if stamp > timeStamp
        ]
        if not samples:
            # what the driver answers when no sample is newer than timeStamp
            raise NVMLError(NVML_ERROR_NOT_FOUND)
        return samples
