"""`StackCollector(native=True)` (attach) on a real torch job: compiled frames and OS threads."""

from __future__ import annotations

import stat
import sys
import time
from pathlib import Path

import msgspec
import pytest

from tests.collectors.conftest import Spawn
from torchtop.assess.stack_shares import shares_of
from torchtop.collectors.stacks import StackCollector, find_py_spy
from torchtop.diagnosis.frames import load_frame_patterns
from torchtop.runs.records import SamplerPace, StacksSample

PY_SPY = find_py_spy()
pytestmark = [
    pytest.mark.skipif(PY_SPY is None, reason="py-spy is not installed"),
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="native stacks: Linux"),
]

# Every step converts a 19 MB image batch's dtype twice: the loop is copies under one line.
CONVERTING = """
import torch

torch.set_num_threads(2)
images = torch.randint(0, 255, (16, 3, 224, 224), dtype=torch.uint8)
for step in range(10**9):
    x = images.to(torch.float64).to(torch.float32)
    if step == 1:
        print("ready", flush=True)
"""


def chunks(collector: StackCollector, count: int, timeout_s: float = 90.0) -> list[StacksSample]:
    """The collector's next `count` records, polled as attach's sampler polls it."""
    records: list[StacksSample] = []
    deadline = time.monotonic() + timeout_s
    while len(records) < count and time.monotonic() < deadline:
        record = collector.sample()
        if record is not None:
            records.append(msgspec.convert(record, StacksSample))
        time.sleep(0.5)
    assert len(records) == count, f"{len(records)} of {count} chunks in {timeout_s} s"
    return records


def test_native_samples_keep_python_frames_as_before_and_add_libtorch_copies(
    spawn: Spawn,
) -> None:
    job = spawn(CONVERTING)
    collector = StackCollector(job.pid, native=True)
    typed = chunks(collector, 2)
    assert all(r.native is True for r in typed)
    mains = [t for t in typed[0].processes[0].threads if t.tid == job.pid]
    assert len(mains) >= 10, "a chunk holds the main thread once per sample"
    assert mains[0].frames[-1].function == "<module>", "Python frames only, innermost first"
    assert all(f.line for f in mains[0].frames), "no compiled frame among the Python ones"
    found = shares_of(typed, load_frame_patterns())
    assert found.shares.get("copy", 0.0) >= 0.5, found.shares
    tasks = typed[-1].processes[0].tasks
    assert not isinstance(tasks, msgspec.UnsetType)
    assert any(t.tid == job.pid and t.cpu_s > 0 for t in tasks)
    # torch.set_num_threads(2): the main thread and one OpenMP thread do the copies.
    assert found.intra_op_threads == 2


def test_where_native_dumps_fail_the_collector_falls_back_to_python_frames_and_says_so(
    spawn: Spawn, tmp_path: Path
) -> None:
    # A py-spy that cannot unwind native stacks (built without libunwind, as on some
    # platforms): the real py-spy behind a wrapper that refuses --native.
    wrapper = tmp_path / "py-spy"
    wrapper.write_text(
        "#!/bin/sh\n"
        'case "$*" in *--native*) echo "Error: native stack traces are not supported" >&2;'
        " exit 1;; esac\n"
        f'exec {PY_SPY} "$@"\n'
    )
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
    job = spawn(CONVERTING)
    collector = StackCollector(job.pid, py_spy=[str(wrapper)], native=True)
    records = chunks(collector, 2)
    for record in records:
        assert record.native is msgspec.UNSET
        assert isinstance(record.python_only, str)
        assert record.python_only.startswith("py-spy --native failed, Python frames only")
        assert "not supported" in record.python_only
        assert record.processes[0].threads[0].frames, "Python frames, from dumps"
    assert job.poll() is None, "the job runs on"


def test_the_native_pace_lengthens_chunks_after_the_fast_start_and_says_its_own_cpu(
    spawn: Spawn,
) -> None:
    job = spawn(CONVERTING)
    collector = StackCollector(job.pid, native=True, budget_share=0.01)
    typed = chunks(collector, 3, timeout_s=120.0)
    collector.close()
    paces = [r.processes[0].sampler for r in typed]
    assert all(isinstance(p, SamplerPace) for p in paces)
    lengths = [p.chunk_s for p in paces if isinstance(p, SamplerPace)]
    assert lengths == [4, 4, 8], "two short chunks, then the budget asks for longer ones"
    # py-spy loads libtorch's symbols each chunk: a tenth of a CPU-second at the very least.
    assert all(
        p.cpu_s > 0.1 and p.budget_share == 0.01 for p in paces if isinstance(p, SamplerPace)
    )
    mains = [t for t in typed[2].processes[0].threads if t.tid == job.pid]
    assert len(mains) >= 16, "an 8 s chunk at 4 a second holds about 32 looks"
