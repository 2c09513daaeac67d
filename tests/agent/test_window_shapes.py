"""A profiler window records each operator's input shapes and types, which the report's FLOPs
per operator and MFU are counted from; turned off, the trace has none."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import torch

from torchtop.agent.profiler_window import ProfilerWindow


def _window_trace(tmp_path: Path, shapes: bool) -> list[dict[str, object]]:
    window = ProfilerWindow(tmp_path / "traces", "w0", first_step=3, steps=2, shapes=shapes)
    a, b = torch.ones(32, 48), torch.ones(48, 16)
    window.open()
    done = False
    while not done:
        torch.mm(a, b)
        done = window.step_ended()
    path = window.save(1)
    with gzip.open(path, "rt", encoding="utf-8") as trace:
        events: list[dict[str, object]] = json.load(trace)["traceEvents"]
    return [e for e in events if e.get("name") == "aten::mm"]


def test_a_window_records_the_shapes_and_types_of_each_operator(tmp_path: Path) -> None:
    mms = _window_trace(tmp_path, shapes=True)
    assert len(mms) == 2
    for event in mms:
        args = _args(event)
        assert args["Input Dims"] == [[32, 48], [48, 16]]
        assert args["Input type"] == ["float", "float"]


def test_without_shapes_the_trace_has_none(tmp_path: Path) -> None:
    mms = _window_trace(tmp_path, shapes=False)
    assert len(mms) == 2
    assert all("Input Dims" not in _args(e) for e in mms)


def _args(event: dict[str, object]) -> dict[str, object]:
    args = event.get("args")
    return args if isinstance(args, dict) else {}
