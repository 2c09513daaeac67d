"""A job that dies of out-of-memory is named so, with the last peak its trace measured."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import msgspec
import pytest

from tests.conftest import WORKLOADS
from torchtop.analysis.oom import out_of_memory
from torchtop.model.memory import DeviceMemory
from torchtop.sessions.offline import analyze_paths

JOB = WORKLOADS / "dies_of_oom.py"


def test_a_job_raising_out_of_memory_is_reported_with_its_last_peak(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    done = subprocess.run(
        [sys.executable, str(JOB), str(tmp_path)], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 1
    (trace,) = tmp_path.glob("*.pt.trace.json")
    (cpu,) = analyze_paths([str(trace)]).job.memory
    # The trace is a CPU one: read its entry as the device the message names.
    as_gpu = msgspec.structs.replace(cpu, device="cuda:0")
    found = out_of_memory(done.stderr[-4000:], (as_gpu,))
    assert found is not None
    assert found.message.startswith("torch.OutOfMemoryError: CUDA out of memory")
    assert found.device == "cuda:0"
    assert found.last_peak_bytes == cpu.peak_allocated_bytes >= 48 << 20
    assert found.top_allocators[0].name == "aten::empty"


def test_a_host_allocation_failure_names_the_cpu_and_other_errors_are_not_oom() -> None:
    cpu = DeviceMemory("cpu", None, 5e9, None, 3, "forward", None, None, None, None)
    host = (
        "RuntimeError: [enforce fail at alloc_cpu.cpp:117] "
        "DefaultCPUAllocator: can't allocate memory"
    )
    found = out_of_memory(f"Traceback ...\n{host}\n", (cpu,))
    assert found is not None and (found.device, found.last_peak_bytes) == ("cpu", 5e9)
    assert out_of_memory("ValueError: bad shape\n", (cpu,)) is None
