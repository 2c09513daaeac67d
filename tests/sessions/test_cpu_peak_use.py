"""When `run` gets the CPU's peak: the cache is read before the job within two seconds, a
measurement is started after a CPU-only job that had none, and `TORCHTOP_CPU_PEAK=0` stops both."""

from __future__ import annotations

import importlib.metadata
import shutil
import sys
import time
from pathlib import Path

import pytest

from torchtop.collectors.cpu_peak import CACHE_NAME, cache_key, write_cache
from torchtop.model.efficiency import Efficiency
from torchtop.model.peak import MEASURED, Peak
from torchtop.sessions.cpu_peak_use import cached_peak, job_python, measure_after

RECORD = {"fp32_tflops": 0.25, "tb_s": 0.01, "threads": 2, "matmul_n": 2048,
          "copy_bytes": 64 << 20, "measured_at": "2026-11-29T09:00:00+00:00"}  # fmt: skip
COMMAND = [sys.executable, "train.py"]


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TORCHTOP_CACHE_DIR", str(tmp_path))
    return tmp_path


def efficiency(device: str, peak: Peak | None) -> Efficiency:
    return Efficiency(device, peak, 4, 1000.0, 1e9, None, "fp32", "host")


def test_the_job_python_is_its_commands_python_else_torchtops() -> None:
    assert job_python(["python3", "train.py"]) == shutil.which("python3")
    assert job_python(["torchrun", "--nproc_per_node=2", "train.py"]) == sys.executable
    assert job_python([]) == sys.executable


def test_a_cached_peak_is_read_before_the_job_and_nothing_else(cache: Path) -> None:
    assert cached_peak(COMMAND, {}) is None  # nothing cached: no measuring before the job
    write_cache(cache / CACHE_NAME, cache_key(importlib.metadata.version("torch")), RECORD)
    started = time.monotonic()
    peak = cached_peak(COMMAND, {})
    assert time.monotonic() - started < 2.0
    assert peak is not None and peak.source == MEASURED
    assert dict(peak.tflops) == {"fp32": 0.25} and peak.tb_s == 0.01
    assert cached_peak(COMMAND, {"TORCHTOP_CPU_PEAK": "0"}) is None


def test_a_measurement_follows_only_a_cpu_job_without_a_peak(cache: Path) -> None:
    peak = Peak("a CPU", {"fp32": 0.25}, 0.01, MEASURED)
    gpu = Peak("NVIDIA H100", {"bf16": 989.4}, 3.35, "datasheet")
    assert not measure_after(None, COMMAND, {})
    assert not measure_after(efficiency("CPU", peak), COMMAND, {})
    assert not measure_after(efficiency("NVIDIA H100", gpu), COMMAND, {})
    assert not measure_after(efficiency("NVIDIA H100", None), COMMAND, {})
    assert not measure_after(efficiency("CPU", None), COMMAND, {"TORCHTOP_CPU_PEAK": "0"})
    # Detached: it measures (or, on a busy machine, declines) after the caller has gone on.
    assert measure_after(efficiency("CPU", None), COMMAND, {})
