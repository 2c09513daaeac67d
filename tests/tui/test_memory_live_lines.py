"""The Memory panel's lines for the agent's live entries: the RSS of a CPU job, and a CUDA
device's peak, step, headroom and NVML's reading beside."""

from __future__ import annotations

from torchtop.model.memory import DeviceMemory
from torchtop.tui.widgets.memory import device_lines

GB = 10**9  # the dashboard writes decimal units


def _entry(device: str, **figures: object) -> DeviceMemory:
    base: dict[str, object] = {
        "rank": None,
        "peak_reserved_bytes": None,
        "peak_phase": None,
        "capacity_bytes": None,
        "persistent_bytes": None,
        "headroom_bytes": None,
        "batch_factor_max": None,
        "source": "agent",
    }
    return DeviceMemory(device=device, **{**base, **figures})  # type: ignore[arg-type]


def test_a_cpu_job_s_panel_names_its_resident_set_and_the_step_of_its_peak() -> None:
    host = _entry(
        "host",
        peak_allocated_bytes=340 * 10**6,
        peak_step=2,
        curve=((0.0, 300.0 * 10**6, None), (0.1, 340.0 * 10**6, None)),
    )
    lines = [line.plain for line in device_lines(host, 40)]
    assert lines[0] == "host RSS peak 340.0 MB at step 2"
    assert len(lines) == 2  # the curve; no headroom without a capacity


def test_a_gpu_job_s_panel_shows_headroom_and_nvml_beside_the_allocator() -> None:
    cuda = _entry(
        "cuda:0",
        peak_allocated_bytes=20.0 * GB,
        peak_step=0,
        capacity_bytes=80 * GB,
        headroom_bytes=60.0 * GB,
        batch_factor_max=7.0,
        nvml_used_peak_bytes=21.0 * GB,
    )
    lines = [line.plain for line in device_lines(cuda, 40)]
    assert lines[0].startswith("cuda:0 peak 20.0 GB at step 0")
    assert "headroom 60.0 GB, batch up to 7.0x fits" in lines
    assert "NVML used 21.0 GB" in lines
