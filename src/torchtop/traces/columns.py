"""Turn batches of decoded events into the columnar `TraceData`.

Events are first sorted into buckets by kind with one dictionary lookup each, then every bucket
becomes numpy columns through list comprehensions: the only per-event Python work is that one
pass. The event categories of three generations of Kineto map onto one set of kinds here, so
analysis never sees schema differences.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

import numpy as np

from torchtop.traces.data import (
    NO_ID,
    Copies,
    Floats,
    Ints,
    MemoryTrack,
    Spans,
    empty_floats,
    empty_ints,
)
from torchtop.traces.schema import Event, EventArgs

ONE_DAY_US = 86_400e6
STEP_PREFIX = "ProfilerStep#"

KERNEL, COPY, MEMSET, RUNTIME, OP, ANNOTATION, SYNC, TRACE_SPAN, IGNORED = range(9)

# Categories across schemas: 2021 (`Operator`, `Runtime`, ...), 2022 and current (`cpu_op`, ...).
_KIND_BY_CATEGORY = {
    "kernel": KERNEL,
    "memcpy": COPY,
    "gpu_memcpy": COPY,
    "memset": MEMSET,
    "gpu_memset": MEMSET,
    "runtime": RUNTIME,
    "cuda_runtime": RUNTIME,
    "cuda_driver": RUNTIME,
    "operator": OP,
    "cpu_op": OP,
    "python": OP,
    "user_annotation": ANNOTATION,
    "cuda_sync": SYNC,
    "trace": TRACE_SPAN,
}
_KIND_BY_CATEGORY.update({k.capitalize(): v for k, v in list(_KIND_BY_CATEGORY.items())})


def _kind_of(category: object) -> int:
    kind = _KIND_BY_CATEGORY.get(category)  # type: ignore[call-overload]
    if kind is None:
        kind = _KIND_BY_CATEGORY.get(category.lower(), IGNORED) if isinstance(category, str) else IGNORED
        if isinstance(category, str):
            _KIND_BY_CATEGORY[category] = kind
    return kind


class Interner:
    """Maps strings to small integer codes, shared by all event kinds of one trace."""

    def __init__(self) -> None:
        self.codes: dict[object, int] = {}
        self.values: list[str] = []

    def code(self, value: object) -> int:
        code = self.codes.get(value)
        if code is None:
            code = len(self.values)
            self.codes[value] = code
            self.values.append("" if value is None else str(value))
        return code


class SpanColumns:
    """Accumulates one kind's events batch by batch."""

    def __init__(self) -> None:
        self.parts: dict[str, list[np.ndarray]] = defaultdict(list)

    def add(self, columns: dict[str, np.ndarray]) -> None:
        for key, value in columns.items():
            self.parts[key].append(value)

    def column(self, key: str, ints: bool = False) -> np.ndarray:
        parts = self.parts.get(key)
        if not parts:
            return empty_ints() if ints else empty_floats()
        return np.concatenate(parts)

    def spans(self, origin_us: float) -> Spans:
        return Spans(
            start_us=self.column("start") - origin_us,
            end_us=self.column("end") - origin_us,
            name=self.column("name", ints=True),
            thread=self.column("thread", ints=True),
            correlation=self.column("correlation", ints=True),
            external_id=self.column("external_id", ints=True),
            device=self.column("device", ints=True),
        )


def floats(values: list[object]) -> Floats:
    try:
        return np.array(values, dtype=np.float64)
    except (TypeError, ValueError):
        return np.array([_to_float(v) for v in values], dtype=np.float64)


def _to_float(value: object) -> float:
    try:
        return float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return float("nan")


def ints(values: list[object]) -> Ints:
    try:
        return np.array(values, dtype=np.int64)
    except (TypeError, ValueError, OverflowError):
        return np.array([_to_id(v) for v in values], dtype=np.int64)


def _to_id(value: object) -> int:
    if isinstance(value, bool) or value is None:
        return NO_ID
    try:
        number = int(value)  # type: ignore[call-overload]
    except (TypeError, ValueError, OverflowError):
        return NO_ID
    return number if -(2**63) <= number < 2**63 else NO_ID


def _external_id(args: EventArgs | None) -> object:
    if args is None:
        return NO_ID
    value = args.external_id_upper
    if value is None:
        value = args.external_id_lower
    return NO_ID if value is None else value


def _arg(args: EventArgs | None, name: str) -> object:
    if args is None:
        return NO_ID
    value = getattr(args, name)
    return NO_ID if value is None else value


class ColumnBuilder:
    """Feed it batches with `add`; it keeps columns per kind and counts what it dropped."""

    def __init__(self) -> None:
        self.names = Interner()
        self.threads = Interner()
        self.kinds: dict[int, SpanColumns] = defaultdict(SpanColumns)
        self.step_columns = SpanColumns()
        self.copy_extra: dict[str, list[np.ndarray]] = defaultdict(list)
        self.memory: dict[str, list[np.ndarray]] = defaultdict(list)
        self.profiler_span: tuple[float, float] | None = None
        self.events_total = 0
        self.dropped_corrupt = 0
        self.min_ts = float("inf")

    def add(self, batch: Iterable[Event]) -> None:
        buckets: dict[int, list[Event]] = defaultdict(list)
        memory: list[Event] = []
        count = 0
        for event in batch:
            count += 1
            if event.ph == "X":
                buckets[_kind_of(event.cat)].append(event)
            elif event.ph == "i" and event.name == "[memory]":
                memory.append(event)
        self.events_total += count
        for kind, events in buckets.items():
            if kind != IGNORED:
                self._add_spans(kind, events)
        if memory:
            self._add_memory(memory)

    def _add_spans(self, kind: int, events: list[Event]) -> None:
        start = floats([e.ts for e in events])
        dur = floats([e.dur for e in events])
        dur = np.where(np.isnan(dur), 0.0, dur)
        valid = np.isfinite(start) & (dur >= 0) & (dur <= ONE_DAY_US)
        if not valid.all():
            self.dropped_corrupt += int((~valid).sum())
            events = [e for e, ok in zip(events, valid.tolist(), strict=True) if ok]
            start, dur = start[valid], dur[valid]
        if not events:
            return
        self.min_ts = min(self.min_ts, float(start.min()))
        if kind == TRACE_SPAN:
            self._note_profiler_span(events, start, dur)
            return
        names = [self.names.code(e.name) for e in events]
        columns = {
            "start": start,
            "end": start + dur,
            "name": np.array(names, dtype=np.int64),
            "thread": ints([self.threads.code(e.tid) for e in events]),
            "external_id": ints([_external_id(e.args) for e in events]),
        }
        if kind in (KERNEL, COPY, MEMSET, RUNTIME, SYNC):
            columns["correlation"] = ints([_arg(e.args, "correlation") for e in events])
            columns["device"] = ints([_device(e) for e in events])
        if kind in (OP, ANNOTATION):
            self._split_steps(columns, kind)
            return
        self.kinds[kind].add(columns)
        if kind == COPY:
            self._add_copy_details(events)

    def _split_steps(self, columns: dict[str, np.ndarray], kind: int) -> None:
        step_codes = [c for c, n in enumerate(self.names.values) if n.startswith(STEP_PREFIX)]
        is_step = np.isin(columns["name"], step_codes)
        if is_step.any():
            self.step_columns.add({k: v[is_step] for k, v in columns.items()})
            columns = {k: v[~is_step] for k, v in columns.items()}
        self.kinds[kind].add(columns)

    def _add_copy_details(self, events: list[Event]) -> None:
        self.copy_extra["bytes"].append(floats([_none_nan(e.args, "bytes") for e in events]))
        kinds, pageable = zip(*(_copy_kind(e.name) for e in events), strict=True)
        self.copy_extra["kind"].append(np.array(kinds, dtype=np.int64))
        self.copy_extra["pageable"].append(np.array(pageable, dtype=np.bool_))

    def _note_profiler_span(self, events: list[Event], start: Floats, dur: Floats) -> None:
        for event, ts, length in zip(events, start.tolist(), dur.tolist(), strict=True):
            if isinstance(event.name, str) and event.name.startswith("PyTorch Profiler"):
                self.profiler_span = (ts, ts + length)

    def _add_memory(self, events: list[Event]) -> None:
        device_type = ints([_arg(e.args, "device_type") for e in events])
        cuda = device_type == 1
        if not cuda.any():
            return
        kept = [e for e, ok in zip(events, cuda.tolist(), strict=True) if ok]
        self.memory["ts"].append(floats([e.ts for e in kept]))
        self.memory["bytes"].append(floats([_arg(e.args, "memory_bytes") for e in kept]))
        self.memory["total"].append(floats([_none_nan(e.args, "total_allocated") for e in kept]))
        self.memory["device"].append(ints([_arg(e.args, "device_id") for e in kept]))

    def origin(self) -> float:
        return float(np.floor(self.min_ts)) if np.isfinite(self.min_ts) else 0.0

    def spans(self, kind: int, origin_us: float) -> Spans:
        return self.kinds[kind].spans(origin_us) if kind in self.kinds else Spans()

    def copies(self, origin_us: float) -> Copies:
        if COPY not in self.kinds:
            return Copies()
        return Copies(
            spans=self.kinds[COPY].spans(origin_us),
            bytes=np.concatenate(self.copy_extra["bytes"]),
            kind=np.concatenate(self.copy_extra["kind"]),
            pageable=np.concatenate(self.copy_extra["pageable"]),
        )

    def memory_track(self, origin_us: float) -> MemoryTrack:
        if not self.memory:
            return MemoryTrack()
        return MemoryTrack(
            ts_us=np.concatenate(self.memory["ts"]) - origin_us,
            bytes=np.concatenate(self.memory["bytes"]),
            total_allocated=np.concatenate(self.memory["total"]),
            device=np.concatenate(self.memory["device"]),
        )


def _device(event: Event) -> object:
    if event.args is not None and event.args.device is not None:
        return event.args.device
    return event.pid if isinstance(event.pid, int) else NO_ID


def _none_nan(args: EventArgs | None, name: str) -> object:
    value = None if args is None else getattr(args, name)
    return float("nan") if value is None else value


def _copy_kind(name: object) -> tuple[int, bool]:
    """Direction and pageability from names like `Memcpy HtoD (Pageable -> Device)`."""
    text = name if isinstance(name, str) else ""
    if "HtoD" in text or "HostToDevice" in text:
        kind = 0
    elif "DtoH" in text or "DeviceToHost" in text:
        kind = 1
    elif "DtoD" in text or "DeviceToDevice" in text:
        kind = 2
    else:
        kind = 3
    return kind, "Pageable" in text
