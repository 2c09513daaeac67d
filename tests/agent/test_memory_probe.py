"""The agent's memory probe: each step's CUDA peak (through a fake shaped as torch.cuda is),
the process's RSS against psutil's own reading, and nothing made up for a CPU job."""

from __future__ import annotations

import inspect

import psutil
import torch

from tests.fakes.fake_torch_cuda import FakeCuda
from torchtop.agent.memory_probe import (
    ALLOCATED_KEY,
    PEAK_KEY,
    READ_EVERY_S,
    RESERVED_KEY,
    MemoryProbe,
)

GIB = 2**30


def test_the_fake_reads_the_counters_under_the_names_torch_cuda_reads_them() -> None:
    names = {
        PEAK_KEY: torch.cuda.max_memory_allocated,
        ALLOCATED_KEY: torch.cuda.memory_allocated,
        RESERVED_KEY: torch.cuda.memory_reserved,
    }
    for key, function in names.items():
        assert f'"{key}"' in inspect.getsource(function), key
        assert key in FakeCuda(GIB).memory_stats(0)
    for name in ("is_initialized", "current_device", "reset_peak_memory_stats"):
        assert callable(getattr(torch.cuda, name))
    # A CPU build has no device properties to look at: `total_memory` (bytes) is as
    # documented for torch.cuda.get_device_properties.


def test_each_step_reports_its_own_peak_not_the_run_s() -> None:
    cuda = FakeCuda(total_memory=80 * GIB)
    probe = MemoryProbe(cuda)
    cuda.allocate(10 * GIB)  # weights and optimizer state
    cuda.allocate(30 * GIB)  # activations of step 0
    cuda.free(30 * GIB)
    first = probe.read()
    cuda.allocate(5 * GIB)  # a smaller step 1
    cuda.free(5 * GIB)
    second = probe.read()
    assert first["cuda_peak_allocated_bytes"] == 40 * GIB
    assert second["cuda_peak_allocated_bytes"] == 15 * GIB
    assert first["cuda_allocated_bytes"] == second["cuda_allocated_bytes"] == 10 * GIB
    assert first["cuda_reserved_bytes"] == 40 * GIB  # the caching allocator keeps its blocks
    assert first["cuda_device"] == 0


def test_the_capacity_is_asked_and_written_once() -> None:
    cuda = FakeCuda(total_memory=80 * GIB)
    probe = MemoryProbe(cuda)
    readings = [probe.read() for _ in range(5)]
    assert readings[0]["cuda_capacity_bytes"] == 80 * GIB
    assert all("cuda_capacity_bytes" not in r for r in readings[1:])
    assert cuda.properties_asked == 1


def test_a_job_that_has_not_initialised_cuda_gets_no_cuda_figures() -> None:
    cuda = FakeCuda(total_memory=80 * GIB)
    cuda.initialized = False
    figures = MemoryProbe(cuda).read()
    assert not any(name.startswith("cuda") for name in figures)
    assert (figures["rss_bytes"] or 0) > 0


def test_a_cpu_job_s_probe_reads_the_rss_alone() -> None:
    # This process imported torch (CPU build): torch.cuda is there, never initialised.
    assert not torch.cuda.is_initialized()  # type: ignore[no-untyped-call]
    figures = MemoryProbe().read()
    assert set(figures) == {"rss_bytes"}


def test_the_rss_agrees_with_psutil_s_reading_of_the_same_process() -> None:
    probe = MemoryProbe()
    ballast = torch.ones(64 * 2**20 // 4)  # 64 MiB, touched
    ours = probe.rss_bytes()
    theirs = psutil.Process().memory_info().rss
    assert ours is not None
    assert abs(ours - theirs) < 2 * 2**20, (ours, theirs)
    del ballast


def test_steps_shorter_than_the_reading_interval_share_one_reading_whose_peak_covers_them() -> None:
    cuda = FakeCuda(total_memory=80 * GIB)
    probe = MemoryProbe(cuda)
    assert probe.read(now_s=100.0)["cuda_peak_allocated_bytes"] == 0
    cuda.allocate(30 * GIB)  # a short step's peak
    cuda.free(30 * GIB)
    assert probe.read(now_s=100.0 + READ_EVERY_S / 2) == {}  # too soon: nothing read or reset
    later = probe.read(now_s=100.0 + 2 * READ_EVERY_S)
    assert later["cuda_peak_allocated_bytes"] == 30 * GIB  # the skipped step's peak is kept
