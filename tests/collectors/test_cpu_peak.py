"""The CPU's measured peak: a real measurement with this machine's torch, checked against numpy's
own matmul and copy; cached and read back in milliseconds; refused beside a busy process; keyed
by the torch version; a failing or torch-less Python is a reason, not a peak."""

from __future__ import annotations

import os
import stat
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from tests.collectors.conftest import Spawn
from torchtop.collectors.cpu_peak import (
    BUSY_CORES,
    CACHE_NAME,
    cache_key,
    cpu_model,
    cpu_peak,
    read_cache,
    run_benchmark,
    torch_version,
    write_cache,
)
from torchtop.model.peak import MEASURED

BUSY_LOOP = """
    print("ready", flush=True)
    while True:
        pass
"""
WAIT_FOR_IDLE_S = 30.0


def _numpy_matmul_tflops(n: int = 2048) -> float:
    """An independent figure: numpy's BLAS on the same size, best of three."""
    a = np.random.default_rng(0).standard_normal((n, n), dtype=np.float32)
    best = float("inf")
    for _ in range(3):
        started = time.perf_counter()
        np.matmul(a, a)
        best = min(best, time.perf_counter() - started)
    return 2.0 * n**3 / best / 1e12


def _numpy_copy_tb_s(size: int = 64 * 1024 * 1024) -> float:
    source = np.ones(size // 4, dtype=np.float32)
    target = np.empty_like(source)
    best = float("inf")
    for _ in range(5):
        started = time.perf_counter()
        np.copyto(target, source)
        best = min(best, time.perf_counter() - started)
    return 2.0 * size / best / 1e12


@pytest.mark.alone
def test_a_real_measurement_is_plausible_and_read_back_from_the_cache(tmp_path: Path) -> None:
    deadline = time.monotonic() + WAIT_FOR_IDLE_S
    reading = cpu_peak(cache_dir=tmp_path)
    while reading.peak is None and time.monotonic() < deadline:
        assert reading.reason is not None and "idle machine" in reading.reason, reading.reason
        time.sleep(2.0)
        reading = cpu_peak(cache_dir=tmp_path)
    if reading.peak is None:
        pytest.skip(f"the machine stayed busy for {WAIT_FOR_IDLE_S:.0f} s: {reading.reason}")
    peak = reading.peak
    assert reading.fresh and peak.source == MEASURED and peak.device == cpu_model()
    fp32 = peak.for_dtype("fp32")
    assert fp32 is not None and peak.tb_s is not None
    assert 1e-3 < fp32 < 100 and 1e-4 < peak.tb_s < 5
    assert 1 / 3 < fp32 / _numpy_matmul_tflops() < 3
    assert 1 / 3 < peak.tb_s / _numpy_copy_tb_s() < 3
    assert set(read_cache(tmp_path / CACHE_NAME)) == {cache_key(str(torch_version(sys.executable)))}

    started = time.perf_counter()
    again = cpu_peak(cache_dir=tmp_path)
    took_s = time.perf_counter() - started
    assert again.peak == peak and not again.fresh and again.reason is None
    assert took_s < 0.2, f"the cached peak took {took_s * 1000:.0f} ms to read"


@pytest.mark.alone
def test_a_busy_process_beside_it_refuses_the_measurement(tmp_path: Path, spawn: Spawn) -> None:
    spawn(BUSY_LOOP, name="busy.py")
    time.sleep(0.3)
    started = time.monotonic()
    reading = cpu_peak(cache_dir=tmp_path)
    assert reading.peak is None and reading.reason is not None
    assert "not measured" in reading.reason and "idle machine" in reading.reason
    used = float(reading.reason.split("used ")[1].split(" cores")[0])
    assert used > BUSY_CORES
    assert time.monotonic() - started < 5, "it measured anyway"
    assert not (tmp_path / CACHE_NAME).exists()


def test_a_cached_peak_is_kept_per_torch_version_and_cpu(tmp_path: Path) -> None:
    version = torch_version(sys.executable)
    assert version is not None
    record = {"fp32_tflops": 0.05, "tb_s": 0.01, "threads": 2, "matmul_n": 2048}
    write_cache(tmp_path / CACHE_NAME, cache_key("0.0.1-other"), record)
    stale = cpu_peak(cache_dir=tmp_path, measure=False)
    assert stale.peak is None and stale.reason is not None and "not measured" in stale.reason
    write_cache(tmp_path / CACHE_NAME, cache_key(version), record | {"copy_bytes": 2**26})
    started = time.perf_counter()
    found = cpu_peak(cache_dir=tmp_path, measure=False)
    assert time.perf_counter() - started < 0.2
    assert found.peak is not None and found.peak.tflops == {"fp32": 0.05}
    assert found.peak.tb_s == 0.01 and "64 MiB copy" in found.peak.note
    assert f"torch {version}" in found.peak.note
    assert len(read_cache(tmp_path / CACHE_NAME)) == 2


def test_an_unreadable_cache_is_an_empty_one(tmp_path: Path) -> None:
    (tmp_path / CACHE_NAME).write_text("{not json", encoding="utf-8")
    assert read_cache(tmp_path / CACHE_NAME) == {}
    reading = cpu_peak(cache_dir=tmp_path, measure=False)
    assert reading.peak is None


def test_a_python_without_torch_has_no_peak(tmp_path: Path) -> None:
    bare = "/usr/bin/python3"
    if not os.access(bare, os.X_OK) or torch_version(bare) is not None:
        pytest.skip(f"{bare} is missing or has torch")
    reading = cpu_peak(bare, cache_dir=tmp_path)
    assert reading.peak is None and reading.reason == f"torch is not installed for {bare}"


def test_a_failing_benchmark_is_a_one_line_reason(tmp_path: Path) -> None:
    failing = tmp_path / "python"
    failing.write_text("#!/bin/sh\necho 'ImportError: libtorch_cpu.so: cannot open' >&2\nexit 3\n")
    failing.chmod(failing.stat().st_mode | stat.S_IXUSR)
    reason = run_benchmark(str(failing))
    assert isinstance(reason, str) and "\n" not in reason
    assert "(exit 3)" in reason and "libtorch_cpu.so" in reason


def test_the_benchmark_ignores_the_jobs_thread_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """OMP_NUM_THREADS=1 in torchtop's environment is a job's setting, not the machine's: the
    measuring process does not get it."""
    echo = tmp_path / "python"
    echo.write_text(
        '#!/bin/sh\nprintf \'{"fp32_tflops": 1, "tb_s": 1, "omp": "%s"}\\n\' '
        '"${OMP_NUM_THREADS:-unset}"\n'
    )
    echo.chmod(echo.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    record = run_benchmark(str(echo))
    assert isinstance(record, dict) and record["omp"] == "unset"
