"""The reader's memory: a trace's columns are never held twice, a column of one value holds no
memory per event, and the worker's answer is read as it streams (a cut one costs a re-read)."""

from __future__ import annotations

import io
import json
import os
import tracemalloc
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from torchtop.analysis.summary import analyze_trace
from torchtop.traces import decode, parallel, read_trace
from torchtop.traces.data import TraceData


def kernel_trace(count: int) -> dict[str, Any]:
    """`count` steps of an operator, its launch and its kernel, all on GPU 0; `[memory]`
    events without the allocator's totals (as before PyTorch 1.10)."""
    events: list[dict[str, Any]] = []
    for i in range(count):
        ts = 1_700_000_000_000_000 + 100 * i
        args = {"correlation": i, "External id": i}
        events += [
            {"ph": "X", "cat": "cpu_op", "name": f"aten::op{i % 5}", "pid": 1, "tid": 1,
             "ts": ts, "dur": 40, "args": {"External id": i}},
            {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
             "ts": ts + 1, "dur": 3, "args": args},
            {"ph": "X", "cat": "kernel", "name": f"kernel_{i % 3}", "pid": 0, "tid": 7,
             "ts": ts + 5, "dur": 60, "args": {**args, "device": 0}},
            {"ph": "i", "name": "[memory]", "pid": 1, "tid": 1, "ts": ts + 2, "s": "t",
             "args": {"Device Type": 0, "Device Id": -1, "Bytes": 256 - 512 * (i % 2)}},
        ]  # fmt: skip
    events.append(
        {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1,
         "ts": 1_700_000_000_000_000, "dur": 100 * count}
    )  # fmt: skip
    return {"schemaVersion": 1, "traceEvents": events}


def column_bytes(trace: TraceData) -> int:
    """The bytes of the trace's columns, each counted whole (as its parts are while read)."""
    total = 0
    for field in ("kernels", "runtime", "ops", "memsets", "annotations", "steps", "syncs"):
        spans = getattr(trace, field)
        total += sum(int(getattr(spans, k).nbytes) for k in spans.__struct_fields__)
    memory = trace.memory
    return total + sum(int(getattr(memory, k).nbytes) for k in memory.__struct_fields__)


@pytest.fixture
def alone(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(parallel.WORKERS_ENV, "1")
    monkeypatch.setattr(decode, "BLOCK_BYTES", 64 << 10)  # many small parts, as a big file has


@pytest.mark.usefixtures("alone")
def test_reading_never_holds_a_traces_columns_twice(tmp_path: Path) -> None:
    path = tmp_path / "kernels.json"
    path.write_text(json.dumps(kernel_trace(20_000)))
    tracemalloc.start()
    try:
        before, _ = tracemalloc.get_traced_memory()
        trace = read_trace(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    columns = column_bytes(trace)
    assert len(trace.ops) == 20_000 and columns > 2_000_000
    # Columns joined while their parts are held make twice the columns; taken part by part,
    # the peak is the columns, one column's parts and the piece being decoded.
    assert peak - before < 1.5 * columns


@pytest.mark.usefixtures("alone")
def test_a_column_of_one_value_is_that_value_repeated_without_memory(tmp_path: Path) -> None:
    path = tmp_path / "kernels.json"
    path.write_text(json.dumps(kernel_trace(3_000)))
    trace = read_trace(path)
    device, totals = trace.kernels.device, trace.memory.total_allocated
    assert device.strides == (0,) and len(device) == 3_000 and set(device.tolist()) == {0}
    assert totals.strides == (0,) and len(totals) == 3_000 and np.isnan(totals).all()
    assert not device.flags.writeable  # analysis reads columns, never writes them
    varied = trace.kernels.name
    assert varied.strides == (varied.itemsize,) and set(varied.tolist()) == {
        trace.names.index(f"kernel_{i}") for i in range(3)
    }
    analysis = analyze_trace(trace)
    assert analysis.top_kernels and sum(k.count for k in analysis.top_kernels) == 3_000


def test_a_workers_answer_cut_short_costs_a_reread_not_the_result(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(parallel, "PIECE_BYTES", 8192)
    path = tmp_path / "kernels.json"
    path.write_text(json.dumps(kernel_trace(2_000), indent=1))
    monkeypatch.setenv(parallel.WORKERS_ENV, "1")
    alone = read_trace(path)
    real_dump = parallel.pickle_answer

    def dump_half(answer: tuple[object, ...], pipe: Any) -> None:
        whole = io.BytesIO()
        real_dump(answer, whole)
        pipe.write(whole.getvalue()[: len(whole.getvalue()) // 2])
        pipe.flush()
        os._exit(1)  # dies mid-answer

    monkeypatch.setattr(parallel, "pickle_answer", dump_half)
    monkeypatch.setenv(parallel.WORKERS_ENV, "2")
    together = read_trace(path)
    assert len(together.ops) == len(alone.ops) == 2_000
    assert together.ops.start_us.tolist() == alone.ops.start_us.tolist()
    assert together.names == alone.names
