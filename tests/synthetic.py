"""Tiny hand-written Kineto traces for unit tests, in the current and the 2021 event schema.

One training loop, two steps, written both ways: the host runs a DataLoader fetch, an operator
and two launches per step; the device runs the kernel and the copy those launches queue. All
times are microseconds after BASE_US. With the defaults, each 100 µs step splits as
kernel 40, memcpy 10, runtime 10, dataloader 20, cpu_exec 10, other 10.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

BASE_US = 1_700_000_000_000_000
DATALOADER = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"
HOST_PID, HOST_TID = 4242, 4242
DEVICE_PID, STREAM = 0, 7

CATEGORIES = {
    "current": {
        "op": "cpu_op",
        "annotation": "user_annotation",
        "runtime": "cuda_runtime",
        "kernel": "kernel",
        "memcpy": "gpu_memcpy",
        "memset": "gpu_memset",
    },
    # 2021 traces: ProfilerStep is an `Operator`, ids are spelt `external id` on device events.
    "2021": {
        "op": "Operator",
        "annotation": "Operator",
        "runtime": "Runtime",
        "kernel": "Kernel",
        "memcpy": "Memcpy",
        "memset": "Memset",
    },
}

EXPECTED_STEP_US = {
    "kernel": 40.0,
    "memcpy": 10.0,
    "memset": 0.0,
    "communication": 0.0,
    "runtime": 10.0,
    "dataloader": 20.0,
    "cpu_exec": 10.0,
    "other": 10.0,
}


def span(cat: str, name: str, ts: float, dur: float, **args: Any) -> dict[str, Any]:
    host = cat in {"cpu_op", "user_annotation", "cuda_runtime", "Operator", "Runtime"}
    event: dict[str, Any] = {
        "ph": "X",
        "cat": cat,
        "name": name,
        "pid": HOST_PID if host else DEVICE_PID,
        "tid": HOST_TID if host else STREAM,
        "ts": BASE_US + ts,
        "dur": dur,
    }
    if args:
        event["args"] = args
    return event


class Loop:
    """Builds the events of a training loop step by step, in one schema."""

    def __init__(self, schema: str = "current") -> None:
        self.schema = schema
        self.cat = CATEGORIES[schema]
        self.events: list[dict[str, Any]] = []
        self._correlation = 0
        self._external = 0

    def _ext(self) -> int:
        self._external += 1
        return self._external

    def _device_args(self, correlation: int, external: int) -> dict[str, Any]:
        key = "external id" if self.schema == "2021" else "External id"
        return {"device": 0, "stream": STREAM, "correlation": correlation, key: external}

    def step(self, number: int, ts: float, dur: float) -> Loop:
        self.events.append(
            span(
                self.cat["annotation"],
                f"ProfilerStep#{number}",
                ts,
                dur,
                **{"External id": self._ext()},
            )
        )
        return self

    def op(self, name: str, ts: float, dur: float) -> Loop:
        self.events.append(span(self.cat["op"], name, ts, dur, **{"External id": self._ext()}))
        return self

    def dataloader(self, ts: float, dur: float) -> Loop:
        return self.op(DATALOADER, ts, dur)

    def launch(
        self,
        ts: float,
        dur: float,
        device_ts: float,
        device_dur: float,
        kind: str = "kernel",
        name: str | None = None,
    ) -> Loop:
        """A runtime call at `ts` and the device work it queues at `device_ts`."""
        self._correlation += 1
        correlation, external = self._correlation, self._ext()
        runtime = {
            "kernel": "cudaLaunchKernel",
            "memcpy": "cudaMemcpyAsync",
            "memset": "cudaMemsetAsync",
        }
        device_name = (
            name
            or {
                "kernel": "volta_sgemm_128x64_nn",
                "memcpy": "Memcpy HtoD (Pageable -> Device)",
                "memset": "Memset (Device)",
            }[kind]
        )
        self.events.append(
            span(
                self.cat["runtime"],
                runtime[kind],
                ts,
                dur,
                correlation=correlation,
                **{"External id" if self.schema == "current" else "external id": external},
            )
        )
        args = self._device_args(correlation, external)
        if kind == "memcpy":
            args["bytes"] = 1 << 20
        self.events.append(span(self.cat[kind], device_name, device_ts, device_dur, **args))
        return self

    def standard_step(self, number: int, at: float) -> Loop:
        """One 100 µs step with the split in EXPECTED_STEP_US."""
        self.step(number, at, 100)
        self.dataloader(at, 20)
        self.op("aten::conv2d", at + 20, 30)
        self.launch(at + 30, 10, device_ts=at + 40, device_dur=40)
        self.launch(at + 45, 5, device_ts=at + 80, device_dur=10, kind="memcpy")
        return self


def two_step_loop(schema: str = "current") -> list[dict[str, Any]]:
    return Loop(schema).standard_step(1, 0).standard_step(2, 100).events


def document(events: list[dict[str, Any]], **keys: Any) -> dict[str, Any]:
    return {"schemaVersion": 1, "traceEvents": events, **keys}


def write_json(path: Path, doc: Any) -> Path:
    data = json.dumps(doc).encode()
    return write_bytes(path, data)


def write_bytes(path: Path, data: bytes) -> Path:
    if path.name.endswith(".gz"):
        data = gzip.compress(data)
    path.write_bytes(data)
    return path
