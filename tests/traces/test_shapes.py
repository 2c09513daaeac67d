"""The operators' recorded arguments: kept per operator as a code into a table of distinct
triples, parsed only on demand, read the same alone, on two cores and by the lenient path."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.conftest import RESNET_NW0
from torchtop.traces import decode, parallel, read_trace
from torchtop.traces.data import NO_ID, TraceData
from torchtop.traces.shapes import decoded

MM_DIMS = [[64, 32], [32, 16]]
MM_TYPES = ["float", "float"]
ADD_ARGS = {
    "Input Dims": [[4], []],
    "Input type": ["float", "Scalar"],
    "Concrete Inputs": ["", "1"],
}


def op(name: str, ts: int, args: dict[str, Any]) -> dict[str, Any]:
    return {"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": 1, "ts": ts, "dur": 5,
            "args": args}  # fmt: skip


def shaped_ops(count: int) -> list[dict[str, Any]]:
    """`count` operators cycling over three shapes, and one in five with no shape at all."""
    events = []
    for i in range(count):
        args: dict[str, Any] = {"External id": i}
        if i % 5:
            args |= {
                "Input Dims": [[64, 32 + i % 3], [32 + i % 3, 16]],
                "Input type": MM_TYPES,
                "Concrete Inputs": ["", ""],
                "Input Strides": [[32, 1], [16, 1]],
            }
        events.append(op(f"aten::mm{i % 2}", 1_000 + 10 * i, args))
    return events


def write(path: Path, events: list[dict[str, Any]]) -> Path:
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": events}, indent=1))
    return path


def shape_of(trace: TraceData, index: int) -> tuple[list[Any], list[Any], list[Any]] | None:
    code = int(trace.op_shape[index])
    return None if code == NO_ID else decoded(trace.shapes[code])


def test_each_operator_keeps_its_dims_types_and_concrete_inputs(tmp_path: Path) -> None:
    events = [
        op("aten::mm", 10, {"Input Dims": MM_DIMS, "Input type": MM_TYPES}),
        op("aten::add", 20, ADD_ARGS),
        op("aten::empty", 30, {"External id": 3}),
        op("aten::mm", 40, {"Input Dims": MM_DIMS, "Input type": MM_TYPES}),
    ]
    trace = read_trace(write(tmp_path / "t.json", events))
    order = np.argsort(trace.ops.start_us)
    assert shape_of(trace, order[0]) == (MM_DIMS, MM_TYPES, [])
    assert shape_of(trace, order[1]) == ([[4], []], ["float", "Scalar"], ["", "1"])
    assert shape_of(trace, order[2]) is None
    assert trace.op_shape[order[0]] == trace.op_shape[order[3]]  # one entry per distinct triple
    assert len(trace.shapes) == 2


def test_a_trace_recorded_without_shapes_keeps_no_table(tmp_path: Path) -> None:
    trace = read_trace(write(tmp_path / "t.json", [op("aten::mm", 10, {"External id": 1})]))
    assert len(trace.ops) == 1
    assert trace.shapes == [] and len(trace.op_shape) == 0


def test_the_lenient_path_keeps_the_shapes_of_the_events_it_keeps(tmp_path: Path) -> None:
    """A piece with an odd-typed field is decoded event by event through plain JSON, where the
    shapes arrive parsed and are turned back into JSON text."""
    events = [
        op("aten::mm", 10, {"Input Dims": MM_DIMS, "Input type": MM_TYPES}),
        {"ph": "X", "cat": "cpu_op", "name": "bad", "pid": 1, "tid": 1, "ts": {"odd": 1}},
    ]
    trace = read_trace(write(tmp_path / "t.json", events))
    assert trace.info.dropped_malformed == 1
    assert shape_of(trace, 0) == (MM_DIMS, MM_TYPES, [])


def test_shapes_read_in_many_pieces_on_two_cores_are_those_read_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Codes are renumbered in sorted order of the triples, so the worker's pieces, which meet
    the shapes in another order, give the very codes of one process reading alone."""
    monkeypatch.setattr(decode, "BLOCK_BYTES", 4096)
    monkeypatch.setattr(parallel, "PIECE_BYTES", 3000)
    path = write(tmp_path / "t.json", shaped_ops(900))
    monkeypatch.setenv(parallel.WORKERS_ENV, "1")
    alone = read_trace(path)
    monkeypatch.setenv(parallel.WORKERS_ENV, "2")
    together = read_trace(path)
    assert len(alone.shapes) == 3
    assert alone.shapes == together.shapes
    np.testing.assert_array_equal(alone.op_shape, together.op_shape)
    assert int((alone.op_shape == NO_ID).sum()) == 900 // 5
    starts = np.argsort(alone.ops.start_us)
    assert shape_of(alone, starts[7]) == ([[64, 33], [33, 16]], MM_TYPES, ["", ""])


def test_the_real_35_mb_trace_keeps_a_shape_for_every_operator_that_recorded_one(
    shared: Path,
) -> None:
    """The 2021 ResNet-50 sample: 23,622 operators record `Input Dims` (grep counts them);
    the reader keeps 501 distinct triples for them."""
    trace = read_trace(shared / RESNET_NW0)
    with_shape = trace.op_shape != NO_ID
    assert int(with_shape.sum()) == 23_622
    assert len(trace.shapes) == len(set(trace.shapes)) == 501
    conv = trace.names.index("aten::cudnn_convolution")
    dims, types, _ = decoded(trace.shapes[int(trace.op_shape[trace.ops.name == conv][0])])
    assert dims[0] == [32, 3, 224, 224] and types[0] == "float"


def test_the_dims_of_pytorch_1_8_traces_are_read_in_their_own_spelling(tmp_path: Path) -> None:
    events = [op("aten::mm", 10, {"Input dims": MM_DIMS, "Input type": MM_TYPES})]
    trace = read_trace(write(tmp_path / "t.json", events))
    assert shape_of(trace, 0) == (MM_DIMS, MM_TYPES, [])
