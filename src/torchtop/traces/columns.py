"""Turn batches of decoded events into the columnar `TraceData`.

A batch is grouped by (category, phase) with an argsort over interned codes, and every group
becomes numpy columns through C-level `map(attrgetter(...))`: no Python statement runs per
event on the hot path. The event categories of three generations of Kineto map onto one set
of kinds here, so analysis never sees schema differences.
"""

from __future__ import annotations

from collections import defaultdict
from itertools import pairwise
from operator import attrgetter

import numpy as np

from torchtop.model.analysis import PythonCalls
from torchtop.traces.data import (
    NO_ID,
    Bools,
    Copies,
    Floats,
    Ints,
    MemoryTrack,
    Spans,
    empty_floats,
    empty_ints,
)
from torchtop.traces.heap import release_freed_memory
from torchtop.traces.memory_columns import is_memory_event, memory_columns
from torchtop.traces.messages import MessageColumns
from torchtop.traces.schema import (
    NO_ARGS,
    OWN_CATEGORY,
    Event,
    InstantEvent,
    MetadataEvent,
    SpanEvent,
)
from torchtop.traces.set_aside import TS_LIMIT_US, add_counts, count_causes
from torchtop.traces.shapes import ShapeKey, ShapeTable

ONE_DAY_US = 86_400e6
CODE_DTYPE = np.int32
"""Interned codes (names, threads): int32 halves their columns; no trace has 2**31 names."""
JOIN_PARTS = 32
"""A kind's parts (one per piece it had events in) are joined into one every this many."""
TRIM_AFTER_BYTES = 16 << 20
"""A column this big, once joined, has its parts' freed pages given back at once (~ms)."""

_TS, _DUR, _NAME, _TID, _ARGS = (attrgetter(f) for f in ("ts", "dur", "name", "tid", "args"))
_CAT = attrgetter("cat")
_EXT_UPPER, _EXT_LOWER = attrgetter("external_id_upper"), attrgetter("external_id_lower")
_CORRELATION, _DEVICE, _BYTES = attrgetter("correlation"), attrgetter("device"), attrgetter("bytes")
_PYTHON_ID, _PYTHON_PARENT = attrgetter("python_id"), attrgetter("python_parent_id")
_SEQUENCE = attrgetter("sequence")
STEP_PREFIX = "ProfilerStep#"
_OWN_TYPES = (InstantEvent, MetadataEvent)

KERNEL, COPY, MEMSET, RUNTIME, OP, ANNOTATION, SYNC, TRACE_SPAN, IGNORED, PYTHON = range(10)

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
    "python_function": PYTHON,
}
_KIND_BY_CATEGORY.update({k.capitalize(): v for k, v in list(_KIND_BY_CATEGORY.items())})


def _kind_of(category: object) -> int:
    kind: int | None = _KIND_BY_CATEGORY.get(category)  # type: ignore[call-overload]
    if kind is None:
        kind = (
            _KIND_BY_CATEGORY.get(category.lower(), IGNORED)
            if isinstance(category, str)
            else IGNORED
        )
        if isinstance(category, str):
            _KIND_BY_CATEGORY[category] = kind
    return kind


class Interner:
    """Maps strings to small integer codes, shared by all event kinds of one trace."""

    def __init__(self) -> None:
        self.codes: dict[object, int] = {}
        self.values: list[str] = []
        self.values_raw: list[object] = []

    def code(self, value: object) -> int:
        code = self.codes.get(value)
        if code is None:
            code = len(self.values)
            self.codes[value] = code
            self.values.append("" if value is None else str(value))
            self.values_raw.append(value)
        return code

    def code_all(self, values: list[object]) -> Ints:
        """Codes for many values: one C-level dict lookup each, new values added as found."""
        codes = list(map(self.codes.get, values))
        if None in codes:
            # Add the new distinct values (dict.fromkeys dedupes at C speed), then look up again.
            for value in dict.fromkeys(values):
                if value not in self.codes:
                    self.code(value)
            codes = list(map(self.codes.get, values))
        return np.array(codes, dtype=CODE_DTYPE)


class SpanColumns:
    """Accumulates one kind's events piece by piece.

    Each part remembers the piece of the file it came from, so that parts decoded out of order
    (by the parallel reader's worker) are put back in file order when the columns are joined."""

    def __init__(self) -> None:
        self.parts: dict[str, list[np.ndarray]] = defaultdict(list)
        self.pieces: list[int] = []
        self._joined = 0
        """How many of the first parts are runs already joined (`_join_run`)."""

    def add(self, columns: dict[str, np.ndarray], piece: int = 0) -> None:
        for key, value in columns.items():
            self.parts[key].append(value)
        self.pieces.append(piece)
        if len(self.pieces) - self._joined >= JOIN_PARTS:
            self._join_run()

    def _join_run(self) -> None:
        """Join the parts added since the last run into one part, taking the run's first
        piece number (its pieces are in file order, so the joined part sorts where they did).

        Many small arrays would otherwise stay scattered over the heap, which keeps their
        pages after they are freed: joined, a trace's columns are a few big blocks each."""
        first, run = self._joined, self.pieces[self._joined :]
        aligned = all(len(parts) == len(self.pieces) for parts in self.parts.values())
        if not aligned or any(a > b for a, b in pairwise(run)):
            self._joined = len(self.pieces)  # not one part a piece, or not in file order
            return
        for parts in self.parts.values():
            parts[first:] = [np.concatenate(parts[first:])]
        self.pieces[first:] = run[:1]
        self._joined = first + 1

    def take_joined(self) -> dict[str, np.ndarray]:
        """Every column joined in file order, the builder left without parts (`column`)."""
        columns = {key: self.column(key) for key in list(self.parts)}
        self.pieces, self._joined = [], 0
        return columns

    def extend(self, other: SpanColumns, remap: dict[str, Ints]) -> None:
        """Take another builder's parts, translating interned codes through `remap`; the
        other is left without them, so that they go when its columns are made here."""
        for key, values in other.parts.items():
            table = remap.get(key)
            self.parts[key].extend(values if table is None else [table[v] for v in values])
        other.parts.clear()
        self.pieces.extend(other.pieces)

    def recode(self, key: str, table: Ints) -> None:
        parts = self.parts.get(key, [])
        for index, values in enumerate(parts):
            parts[index] = table[values]

    def column(self, key: str, ints: bool = False, constant: bool = False) -> np.ndarray:
        """The column joined in file order. Its parts are let go as it is made: each column is
        taken once, so that a trace's columns are never held twice (parts and joined).

        `constant`: a column whose values are all one (a kernel's device on one GPU, the
        totals an old trace never writes) is that value repeated by a read-only view of it,
        which holds no memory per event. Only for columns analysis reads and never writes."""
        parts = self.parts.pop(key, None)
        if not parts:
            return empty_ints() if ints else empty_floats()
        if constant and (repeated := _repeated(parts)) is not None:
            return repeated
        if any(a > b for a, b in pairwise(self.pieces)):
            order = sorted(range(len(parts)), key=self.pieces.__getitem__)
            parts = [parts[i] for i in order]
        joined = np.concatenate(parts)
        parts.clear()
        if joined.nbytes >= TRIM_AFTER_BYTES:
            release_freed_memory()  # the parts' pages, before the next column is joined
        return joined

    def spans(self, origin_us: float) -> Spans:
        # Durations are added after the origin is taken off, so that nanosecond durations
        # survive: float64 resolves only 0.25 µs at an epoch timestamp of 1.7e15 µs.
        # In place (the same sums as `start - origin`, `start + dur`): no column held twice.
        start = self.column("start")
        start -= origin_us
        end = self.column("dur")
        end += start
        return Spans(
            start_us=start,
            end_us=end,
            name=self.column("name", ints=True, constant=True),
            thread=self.column("thread", ints=True, constant=True),
            correlation=self.column("correlation", ints=True, constant=True),
            external_id=self.column("external_id", ints=True, constant=True),
            device=self.column("device", ints=True, constant=True),
        )


def floats(values: list[object]) -> Floats:
    """Floats with None (missing) as NaN; odd strings become NaN on a slower path."""
    try:
        return np.array(values, dtype=np.float64)
    except (TypeError, ValueError):
        return np.array([_to_float(v) for v in values], dtype=np.float64)


def _to_float(value: object) -> float:
    try:
        return float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return float("nan")


def ids(values: list[object]) -> Ints:
    """Integer ids with None (missing) as NO_ID; ids beyond int64 also become NO_ID. Ids
    that all fit in int32 come as int32 (the same values; numpy widens where they meet)."""
    try:
        as_float = np.array(values, dtype=np.float64)
    except (TypeError, ValueError, OverflowError):
        return np.array([_to_id(v) for v in values], dtype=np.int64)
    # float64 is exact only up to 2**53: larger ids take the slow, exact path.
    if (np.abs(as_float) > 2.0**53).any():
        return np.array([_to_id(v) for v in values], dtype=np.int64)
    as_float[~np.isfinite(as_float)] = NO_ID
    # Ids that fit take half the memory (the columns of big traces are mostly ids and codes).
    narrow = bool((np.abs(as_float) < 2.0**31).all())
    return as_float.astype(np.int32 if narrow else np.int64)


def _to_id(value: object) -> int:
    if isinstance(value, bool) or value is None:
        return NO_ID
    try:
        number = int(value)  # type: ignore[call-overload]
    except (TypeError, ValueError, OverflowError):
        return NO_ID
    return number if -(2**63) <= number < 2**63 else NO_ID


class ColumnBuilder:
    """Feed it batches with `add`; it keeps columns per kind and counts what it dropped.

    A batch is one piece of the file; its index (`piece`) orders the columns, so two builders
    that each saw every other piece can be merged (`merge`) into what one builder would hold."""

    def __init__(self) -> None:
        self.names = Interner()
        self.threads = Interner()
        self.categories = Interner()
        self.kinds: dict[int, SpanColumns] = defaultdict(SpanColumns)
        self.step_columns = SpanColumns()
        self.memory = SpanColumns()
        self.python = SpanColumns()
        self.python_names = Interner()
        self.shapes = ShapeTable()
        self.messages = MessageColumns()
        self.profiler_span: tuple[float, float] | None = None
        self.profiler_span_piece = -1
        self.events_total = 0
        self.dropped_corrupt = 0
        """Events dropped as impossible: a timestamp not finite or beyond `TS_LIMIT_US`, a
        duration negative or longer than a day."""
        self.malformed: dict[str, int] = {}
        """Events dropped for a time that is missing or not a number, by field."""
        self.min_ts = float("inf")
        self.end: tuple[int, float] | None = None
        """The furthest piece read and the start of its last timed event: where the reading
        of a truncated file ended."""

    def add(self, batch: list[Event], piece: int = 0) -> None:
        """Group a batch's spans by category without a per-event Python statement beyond
        telling the kinds of event apart (the decoder typed them by phase)."""
        if not batch:
            return
        self.events_total += len(batch)
        if self.end is None or piece >= self.end[0]:
            self._note_end(batch, piece)
        spans = [e for e in batch if type(e) is SpanEvent]
        if len(spans) < len(batch):
            rest = [e for e in batch if type(e) is not SpanEvent]
            memory = [e for e in rest if is_memory_event(e)]
            if memory:
                columns = memory_columns(memory, floats, ids, self.threads.code_all)  # type: ignore[arg-type]
                self.memory.add(self._timed_memory(memory, columns), piece)
            self.events_total -= len(
                [e for e in rest if isinstance(e, _OWN_TYPES) and e.cat == OWN_CATEGORY]
            )
        if not spans:
            return
        categories = self.categories.code_all(list(map(_CAT, spans)))
        own = self.categories.codes.get(OWN_CATEGORY)
        if own is not None:  # an annotated trace: torchtop's own spans count for nothing
            self.events_total -= int(np.count_nonzero(categories == own))
        order = np.argsort(categories, kind="stable")
        bounds = np.flatnonzero(np.diff(categories[order])) + 1
        objects = np.empty(len(spans), dtype=object)
        objects[:] = spans
        for group in np.split(order, bounds):
            kind = _kind_of(self.categories.values_raw[int(categories[group[0]])])
            if kind != IGNORED:
                self._add_spans(kind, objects[group].tolist(), piece)

    def _add_spans(self, kind: int, events: list[SpanEvent], piece: int) -> None:
        if kind == PYTHON:
            self._add_python(events, piece)
            return
        starts, durs = list(map(_TS, events)), list(map(_DUR, events))
        start, dur = floats(starts), floats(durs)
        unset = np.isnan(dur)
        if unset.any():  # a missing duration is 0; one that is not a number stays NaN
            dur[unset] = [0.0 if durs[i] is None else np.nan for i in np.flatnonzero(unset)]
        valid = (np.abs(start) <= TS_LIMIT_US) & (dur >= 0) & (dur <= ONE_DAY_US)
        if not valid.all():
            self._set_aside(starts, durs, valid)
            events = [e for e, ok in zip(events, valid.tolist(), strict=True) if ok]
            start, dur = start[valid], dur[valid]
        if not events:
            return
        self.min_ts = min(self.min_ts, float(start.min()))
        if kind == TRACE_SPAN:
            self._note_profiler_span(events, start, dur, piece)
            return
        args = [a if a is not None else NO_ARGS for a in map(_ARGS, events)]
        external = list(map(_EXT_UPPER, args))
        if None in external:
            lower = map(_EXT_LOWER, args)
            external = [u if u is not None else v for u, v in zip(external, lower, strict=True)]
        columns = {
            "start": start,
            "dur": dur,
            "name": self.names.code_all(list(map(_NAME, events))),
            "thread": self.threads.code_all(list(map(_TID, events))),
            "external_id": ids(external),
        }
        if kind in (KERNEL, COPY, MEMSET, RUNTIME, SYNC):
            columns["correlation"] = ids(list(map(_CORRELATION, args)))
        if kind in (KERNEL, COPY, MEMSET):
            devices = list(map(_DEVICE, args))
            if None in devices:
                devices = [
                    _device(e) if d is None else d for e, d in zip(events, devices, strict=True)
                ]
            columns["device"] = ids(devices)
        if kind == OP:
            self.messages.add(args, start, dur, piece, floats)
            columns["sequence"] = ids(list(map(_SEQUENCE, args)))
            columns["shape"] = self.shapes.code_all(args)
        if kind in (OP, ANNOTATION):
            self._split_steps(columns, kind, piece)
            return
        if kind == COPY:
            columns["bytes"] = floats(list(map(_BYTES, args)))
            kinds, pageable = zip(*(_copy_kind(e.name) for e in events), strict=True)
            columns["kind"] = np.array(kinds, dtype=np.int64)
            columns["pageable"] = np.array(pageable, dtype=np.bool_)
        self.kinds[kind].add(columns, piece)

    def _set_aside(self, starts: list[object], durs: list[object] | None, valid: Bools) -> None:
        """Count the events `valid` leaves out, by cause (the slow path: bad events only)."""
        fields, impossible = count_causes(starts, durs, np.flatnonzero(~valid).tolist())
        add_counts(self.malformed, fields)
        self.dropped_corrupt += impossible

    def _timed_memory(
        self, events: list[Event], columns: dict[str, np.ndarray]
    ) -> dict[str, np.ndarray]:
        """The memory events' columns without those at impossible or unreadable times."""
        valid = np.abs(columns["ts"]) <= TS_LIMIT_US
        if valid.all():
            return columns
        self._set_aside(list(map(_TS, events)), None, valid)
        return {key: values[valid] for key, values in columns.items()}

    def _split_steps(self, columns: dict[str, np.ndarray], kind: int, piece: int) -> None:
        step_codes = [c for c, n in enumerate(self.names.values) if n.startswith(STEP_PREFIX)]
        is_step = np.isin(columns["name"], step_codes)
        if is_step.any():
            self.step_columns.add({k: v[is_step] for k, v in columns.items()}, piece)
            columns = {k: v[~is_step] for k, v in columns.items()}
        self.kinds[kind].add(columns, piece)

    def _note_profiler_span(
        self, events: list[SpanEvent], start: Floats, dur: Floats, piece: int
    ) -> None:
        for event, ts, length in zip(events, start.tolist(), dur.tolist(), strict=True):
            if isinstance(event.name, str) and event.name.startswith("PyTorch Profiler"):
                self.profiler_span = (ts, ts + length)
                self.profiler_span_piece = piece

    def _add_python(self, events: list[SpanEvent], piece: int) -> None:
        """Keep what locating a code fix needs of `python_function` events, apart from the
        other kinds: they count towards no time, origin or dropped event (as before they
        were kept), so a report differs only by the located line."""
        args = [a if a is not None else NO_ARGS for a in map(_ARGS, events)]
        dur = floats(list(map(_DUR, events)))
        dur[~np.isfinite(dur)] = 0.0
        columns = {
            "name": self.python_names.code_all(list(map(_NAME, events))),
            "start": floats(list(map(_TS, events))),
            "thread": self.threads.code_all(list(map(_TID, events))),
            "dur": dur,
            "ident": ids(list(map(_PYTHON_ID, args))),
            "parent": ids(list(map(_PYTHON_PARENT, args))),
        }
        self.python.add(columns, piece)

    def python_calls(self, origin_us: float = 0.0) -> PythonCalls | None:
        if not self.python.pieces:
            return None
        return PythonCalls(
            names=self.python_names.values,
            name=self.python.column("name", ints=True),
            start_us=_minus(self.python.column("start"), origin_us),
            thread=self.python.column("thread", ints=True),
            dur_us=self.python.column("dur"),
            ident=self.python.column("ident", ints=True),
            parent=self.python.column("parent", ints=True),
        )

    def _note_end(self, batch: list[Event], piece: int) -> None:
        for event in reversed(batch):
            ts = getattr(event, "ts", None)
            if isinstance(ts, int | float) and not isinstance(ts, bool) and abs(ts) <= TS_LIMIT_US:
                self.end = (piece, float(ts))
                return

    def _span_columns(self) -> list[SpanColumns]:
        return [*self.kinds.values(), self.step_columns, self.memory, self.python]

    def take_parts(self) -> list[list[np.ndarray]]:
        """Every column's parts, in `part_slots` order, the builder left with empty lists."""
        taken = []
        for columns in self._span_columns():
            for key, parts in columns.parts.items():
                taken.append(parts)
                columns.parts[key] = []
        return taken

    def part_slots(self) -> list[list[np.ndarray]]:
        """Every column's list of parts, in a fixed order (`take_parts`'s)."""
        return [parts for columns in self._span_columns() for parts in columns.parts.values()]

    def merge(self, other: ColumnBuilder) -> None:
        """Take in what another builder read from other pieces of the same file."""
        remap = {
            "name": self.names.code_all(other.names.values_raw),
            "thread": self.threads.code_all(other.threads.values_raw),
            "shape": self.shapes.codes_of(other.shapes.values),
        }
        for kind, columns in other.kinds.items():
            self.kinds[kind].extend(columns, remap)
        self.step_columns.extend(other.step_columns, remap)
        self.memory.extend(other.memory, {"thread": remap["thread"]})
        self.messages.merge(other.messages)
        self.python.extend(
            other.python,
            {
                "name": self.python_names.code_all(other.python_names.values_raw),
                "thread": remap["thread"],
            },
        )
        if other.profiler_span_piece > self.profiler_span_piece:
            self.profiler_span = other.profiler_span
            self.profiler_span_piece = other.profiler_span_piece
        if other.end is not None and (self.end is None or other.end[0] > self.end[0]):
            self.end = other.end
        self.events_total += other.events_total
        self.dropped_corrupt += other.dropped_corrupt
        add_counts(self.malformed, other.malformed)
        self.min_ts = min(self.min_ts, other.min_ts)

    def canonical_order(self) -> None:
        """Renumber names and threads in sorted order of their text.

        Codes then do not depend on which piece saw a name first, so a parallel read gives the
        very arrays of a serial one, and ties in "top N" lists break the same way every time."""
        for interner, key in ((self.names, "name"), (self.threads, "thread")):
            raw = interner.values_raw
            order = sorted(
                range(len(raw)), key=lambda c: (interner.values[c], type(raw[c]).__name__)
            )
            table = np.empty(len(order), dtype=CODE_DTYPE)
            table[order] = np.arange(len(order), dtype=CODE_DTYPE)
            for columns in (*self.kinds.values(), self.step_columns):
                columns.recode(key, table)
            if key == "thread":  # their names are not these (python) or none (memory)
                self.memory.recode(key, table)
                self.python.recode(key, table)
            interner.values = [interner.values[c] for c in order]
            interner.values_raw = [raw[c] for c in order]
            interner.codes = {value: code for code, value in enumerate(interner.values_raw)}

    def op_shapes(self) -> tuple[list[ShapeKey], Ints]:
        """The distinct argument triples, sorted, and each operator's code into them (NO_ID
        where it recorded none), in the order of `spans(OP, ...)`."""
        table, recode = self.shapes.canonical()
        if OP not in self.kinds or not table:
            return [], empty_ints()
        return table, recode[self.kinds[OP].column("shape", ints=True)]

    def origin(self) -> float:
        return float(np.floor(self.min_ts)) if np.isfinite(self.min_ts) else 0.0

    def spans(self, kind: int, origin_us: float) -> Spans:
        return self.kinds[kind].spans(origin_us) if kind in self.kinds else Spans()

    def copies(self, origin_us: float) -> Copies:
        if COPY not in self.kinds:
            return Copies()
        columns = self.kinds[COPY]
        return Copies(
            spans=columns.spans(origin_us),
            bytes=columns.column("bytes"),
            kind=columns.column("kind", ints=True, constant=True),
            pageable=columns.column("pageable").astype(np.bool_),
        )

    def memory_track(self, origin_us: float) -> MemoryTrack:
        if not self.memory.pieces:
            return MemoryTrack()
        column = self.memory.column
        return MemoryTrack(
            ts_us=_minus(column("ts"), origin_us),
            bytes=column("bytes"),
            total_allocated=column("total", constant=True),
            device=column("device", ints=True, constant=True),
            total_reserved=column("reserved", constant=True),
            device_type=column("device_type", ints=True, constant=True),
            address=column("address", ints=True, constant=True),
            thread=column("thread", ints=True, constant=True),
        )

    def op_sequence(self) -> Ints:
        """The operators' autograd sequence numbers, in the order of `spans(OP, ...)`."""
        if OP not in self.kinds:
            return empty_ints()
        return self.kinds[OP].column("sequence", ints=True, constant=True)


def _repeated(parts: list[np.ndarray]) -> np.ndarray | None:
    """The parts as one read-only view of their one value, if they hold only one (NaN
    counting as one value); None otherwise."""
    found = next((part for part in parts if len(part)), None)
    if found is None:
        return None
    first = found[:1].copy()  # not a view: that would keep the whole part
    if first.dtype.kind == "f" and np.isnan(first).all():
        if not all(np.isnan(part).all() for part in parts):
            return None
    elif not all((part == first).all() for part in parts):
        return None
    total = sum(len(part) for part in parts)
    return np.broadcast_to(first.reshape(()), (total,))


def _minus(values: Floats, origin_us: float) -> Floats:
    """`values - origin_us`, in place: the column is the builder's own, taken once."""
    values -= origin_us
    return values


def _device(event: SpanEvent) -> object:
    if event.args is not None and event.args.device is not None:
        return event.args.device
    return event.pid if isinstance(event.pid, int) else NO_ID


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
