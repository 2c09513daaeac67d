"""NvmlCollector against the fake pynvml: record shape, units, per-field failures, no GPU."""

from __future__ import annotations

import os
from typing import Any

import pytest

from tests.collectors.conftest import written
from tests.fakes import fake_pynvml as fake
from tests.fakes.fake_pynvml import FakeDevice
from torchtop.collectors.nvml import NvmlCollector, throttle_names

DEVICE_FIELDS = {
    "index",
    "name",
    "uuid",
    "utilization_gpu_pct",
    "utilization_memory_pct",
    "sm_clock_mhz",
    "mem_clock_mhz",
    "memory_used_bytes",
    "memory_total_bytes",
    "power_w",
    "power_limit_w",
    "temperature_c",
    "pcie_tx_bytes_per_s",
    "pcie_rx_bytes_per_s",
    "throttle_reasons",
}


def sampled(devices: list[FakeDevice], job_pids: set[int] | None = None) -> dict[str, Any]:
    collector = NvmlCollector(fake.fake_pynvml(devices))
    assert collector.start() is None
    record = collector.sample(job_pids)
    assert record is not None
    table: dict[str, Any] = written(record)
    return table


def test_a_gpu_record_names_every_device_field_of_the_run_folder_docs() -> None:
    record = sampled([FakeDevice(), FakeDevice(name="second")])
    assert record["kind"] == "gpu"
    assert isinstance(record["t"], float)
    assert [d["index"] for d in record["devices"]] == [0, 1]
    for device in record["devices"]:
        assert set(device) == DEVICE_FIELDS


def test_readings_are_converted_to_the_units_their_names_say() -> None:
    device = sampled([FakeDevice()])["devices"][0]
    assert device["name"] == "NVIDIA H100 80GB HBM3"
    assert device["uuid"].startswith("GPU-")
    assert device["utilization_gpu_pct"] == 87
    assert device["utilization_memory_pct"] == 41
    assert (device["sm_clock_mhz"], device["mem_clock_mhz"]) == (1980, 2619)
    assert device["memory_used_bytes"] == 40 * 2**30
    assert device["memory_total_bytes"] == 80 * 2**30
    assert device["power_w"] == pytest.approx(350.5)  # from milliwatts
    assert device["power_limit_w"] == pytest.approx(700.0)
    assert device["temperature_c"] == 61
    assert device["pcie_tx_bytes_per_s"] == 2_000 * 1024  # from KB/s
    assert device["pcie_rx_bytes_per_s"] == 500_000 * 1024
    assert device["throttle_reasons"] == []


def test_throttle_reasons_are_decoded_from_the_bitmask_to_nvidia_smi_names() -> None:
    mask = fake.nvmlClocksEventReasonSwPowerCap | fake.nvmlClocksEventReasonHwThermalSlowdown
    device = sampled([FakeDevice(clocks_event_mask=mask)])["devices"][0]
    assert device["throttle_reasons"] == ["sw_power_cap", "hw_thermal_slowdown"]
    assert throttle_names(0x1 | 0x8000) == ["gpu_idle", "unknown_0x8000"]


def test_an_unsupported_reading_is_none_for_that_field_only() -> None:
    errors = {
        "nvmlDeviceGetPowerUsage": fake.NVML_ERROR_NOT_SUPPORTED,
        "nvmlDeviceGetPcieThroughput": fake.NVML_ERROR_NOT_SUPPORTED,
        "nvmlDeviceGetCurrentClocksEventReasons": fake.NVML_ERROR_NO_PERMISSION,
    }
    device = sampled([FakeDevice(errors=errors)])["devices"][0]
    assert device["power_w"] is None
    assert device["pcie_tx_bytes_per_s"] is None and device["pcie_rx_bytes_per_s"] is None
    assert device["throttle_reasons"] is None
    assert device["power_limit_w"] == pytest.approx(700.0)
    assert device["utilization_gpu_pct"] == 87


def test_a_lost_gpu_leaves_none_in_its_fields_instead_of_stopping_the_sampler() -> None:
    lost = {name: fake.NVML_ERROR_GPU_IS_LOST for name in dir(fake._FakeCalls) if "Device" in name}
    device = sampled([FakeDevice(errors=lost)])["devices"][0]
    assert device["index"] == 0
    assert all(device[name] is None for name in DEVICE_FIELDS - {"index"})


def test_the_job_processes_carry_their_memory_and_latest_sm_utilization() -> None:
    device = FakeDevice(
        processes=[(100, 3 * 2**30), (101, None), (999, 2**30)],
        process_samples=[(100, 10, 20), (100, 30, 75), (999, 20, 5)],
    )
    record = sampled([device], job_pids={100, 101})
    assert record["processes"] == [
        {"pid": 100, "device_index": 0, "memory_used_bytes": 3 * 2**30, "sm_util_pct": 75},
        {"pid": 101, "device_index": 0, "memory_used_bytes": None, "sm_util_pct": None},
    ]


def test_process_utilization_asks_only_for_samples_newer_than_the_last_seen() -> None:
    device = FakeDevice(processes=[(100, 2**30)], process_samples=[(100, 30, 75)])
    collector = NvmlCollector(fake.fake_pynvml([device]))
    first, second = written(collector.sample()), written(collector.sample())
    assert first is not None and second is not None
    assert first["processes"][0]["sm_util_pct"] == 75
    # nothing newer than timestamp 30: the driver says Not Found, so not measured this time
    assert second["processes"][0]["sm_util_pct"] is None


def test_per_process_readings_the_driver_refuses_leave_the_list_empty() -> None:
    errors = {
        "nvmlDeviceGetComputeRunningProcesses": fake.NVML_ERROR_NO_PERMISSION,
        "nvmlDeviceGetProcessUtilization": fake.NVML_ERROR_NOT_SUPPORTED,
    }
    record = sampled([FakeDevice(errors=errors, processes=[(1, 1)])])
    assert record["processes"] == []
    assert record["devices"][0]["utilization_gpu_pct"] == 87


@pytest.mark.parametrize(
    ("code", "words"),
    [
        (fake.NVML_ERROR_LIBRARY_NOT_FOUND, "NVML library not found"),
        (fake.NVML_ERROR_DRIVER_NOT_LOADED, "driver not loaded"),
        (fake.NVML_ERROR_UNKNOWN, "NVML could not start"),
    ],
)
def test_nvml_that_cannot_start_gives_a_one_line_reason(code: int, words: str) -> None:
    reason = NvmlCollector(fake.fake_pynvml([FakeDevice()], init_error=code)).start()
    assert reason is not None and words in reason and "\n" not in reason


def test_a_machine_without_gpus_says_no_nvidia_gpu_found_and_shuts_nvml_down() -> None:
    module = fake.fake_pynvml([])
    assert NvmlCollector(module).start() == "no NVIDIA GPU found"
    assert module.calls.shutdowns == 1


def test_the_unavailable_record_is_written_once_then_nothing() -> None:
    collector = NvmlCollector(fake.fake_pynvml([]))
    first = written(collector.sample())
    assert first is not None
    assert first["kind"] == "unavailable" and first["reason"] == "no NVIDIA GPU found"
    assert collector.sample() is None and collector.sample() is None


def test_stop_shuts_nvml_down_once() -> None:
    module = fake.fake_pynvml([FakeDevice()])
    collector = NvmlCollector(module)
    collector.start()
    collector.stop()
    collector.stop()
    assert module.calls.shutdowns == 1


def test_without_an_injected_module_the_real_pynvml_reports_why_it_cannot_run_here() -> None:
    if os.path.exists("/dev/nvidiactl"):
        pytest.skip("this machine has an NVIDIA driver: see the gpu-marked test")
    reason = NvmlCollector().start()
    assert reason is not None and "NVML" in reason


@pytest.mark.gpu
def test_the_real_nvml_measures_every_device_of_this_machine() -> None:
    collector = NvmlCollector()
    reason = collector.start()
    if reason is not None:
        pytest.skip(f"NVML finds no device here: {reason}")
    record = written(collector.sample(job_pids=None))
    collector.stop()
    assert record is not None and record["kind"] == "gpu"
    assert record["devices"], "NVML started but listed no device"
    for device in record["devices"]:
        assert set(device) == DEVICE_FIELDS
        assert device["memory_total_bytes"] > 0
        assert device["name"]
        assert device["utilization_gpu_pct"] is None or 0 <= device["utilization_gpu_pct"] <= 100
        assert device["sm_clock_mhz"] is None or device["sm_clock_mhz"] > 0
