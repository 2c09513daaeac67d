"""Read one trace file into `TraceData`, or fail with one line that names the file."""

from __future__ import annotations

import re
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

from torchtop.errors import InputError
from torchtop.model.trace import DeviceInfo, TraceInfo
from torchtop.traces.columns import (
    ANNOTATION,
    KERNEL,
    MEMSET,
    OP,
    RUNTIME,
    SYNC,
    ColumnBuilder,
)
from torchtop.traces.data import TraceData
from torchtop.traces.decode import EventStream, TraceFormatError
from torchtop.traces.duplicates import drop_duplicates
from torchtop.traces.heap import release_freed_memory
from torchtop.traces.lenient import NESTED_TOO_DEEP
from torchtop.traces.parallel import WorkerFailed, open_trace, take_early_start
from torchtop.traces.schema import DeviceProperties, TraceHeader
from torchtop.traces.set_aside import add_counts
from torchtop.traces.spill import spilled

ProgressSink = Callable[[int, int], None]
"""Called with (bytes read so far, file size) as the file is read."""

_RANK_IN_NAME = re.compile(r"rank[-_]?(\d+)", re.IGNORECASE)


def read_trace(path: Path, on_progress: ProgressSink | None = None) -> TraceData:
    """Read a `.json` or `.json.gz` Kineto trace. Raises InputError for anything unreadable.

    Big files are read on two cores (`traces.parallel`) when that is safe here; if the worker
    fails, the file is read again in this process alone."""
    try:
        trace = _read(path, on_progress, parallel=True)
    except WorkerFailed:
        trace = _read(path, on_progress, parallel=False)
    # Once the builder and the worker's answer are gone: the parts they held are free now.
    release_freed_memory()
    return trace


def _read(path: Path, on_progress: ProgressSink | None, parallel: bool) -> TraceData:
    try:
        size = path.stat().st_size
        opened = (take_early_start(path) if parallel else None) or open_trace(path, parallel)
        try:
            raw, worker = opened.raw, opened.worker

            def report() -> None:
                if on_progress is not None:
                    on_progress(raw.tell(), size)

            share = worker.share if worker is not None else None
            events = EventStream(opened.stream, on_block=report, share=share)
            builder = ColumnBuilder()
            for batch in events:
                builder.add(batch, events.piece)
            if worker is not None:
                remote, remote_stats = worker.finish()
                builder.merge(remote)
                events.stats.merge(remote_stats)
        finally:
            opened.close()
        gzip_cut = opened.inflater is not None and opened.inflater.truncated
        if gzip_cut:
            events.stats.truncated = True
        cut = _Cut(size, events.position, gzip_cut, None if builder.end is None else builder.end[1])
    except TraceFormatError as exc:
        raise InputError(str(path), str(exc)) from None
    except zlib.error as exc:
        raise InputError(str(path), f"not a readable gzip file ({exc})") from None
    except OSError as exc:
        raise InputError(str(path), exc.strerror or str(exc)) from None
    except RecursionError:  # msgspec's, on arrays in arrays a thousand deep
        raise InputError(str(path), NESTED_TOO_DEEP) from None
    if builder.events_total == 0 and not events.stats.truncated:
        unread = events.stats.dropped_malformed
        raise InputError(
            str(path),
            f"the trace holds no events it can read ({unread} of the wrong type)"
            if unread
            else "the trace holds no events",
        )
    if events.stats.truncated and builder.events_total == 0:
        raise InputError(str(path), "truncated before its first whole event")
    duplicates = drop_duplicates(builder)
    builder.canonical_order()
    return _assemble(path, builder, events, cut, duplicates)


class _Cut(NamedTuple):
    """Where a file's reading ended, for saying what a truncated file lost."""

    file_bytes: int
    json_bytes: int
    gzip_cut: bool
    last_ts: float | None


def _assemble(
    path: Path, builder: ColumnBuilder, events: EventStream, cut: _Cut, duplicates: int
) -> TraceData:
    origin = builder.origin()
    header = events.header
    stats = events.stats
    info = TraceInfo(
        path=str(path),
        rank=_rank(header, path),
        world_size=_int_or_none(header.distributedInfo.world_size)
        if header.distributedInfo
        else None,
        backend=_str_or_none(header.distributedInfo.backend) if header.distributedInfo else None,
        events_total=builder.events_total,
        dropped_corrupt=builder.dropped_corrupt,
        dropped_malformed=stats.dropped_malformed + sum(builder.malformed.values()),
        malformed_fields=_by_field(stats.malformed_fields, builder.malformed),
        dropped_duplicate=duplicates,
        truncated=stats.truncated,
        lost_bytes=stats.lost_bytes,
        file_bytes=cut.file_bytes if stats.truncated else None,
        json_bytes=cut.json_bytes if stats.truncated else None,
        gzip_cut=cut.gzip_cut,
        last_event_s=(cut.last_ts - origin) / 1e6
        if stats.truncated and cut.last_ts is not None
        else None,
        repaired=stats.repaired_pieces > 0,
        notes=tuple(stats.notes),
    )
    span = builder.profiler_span
    shapes, op_shape = builder.op_shapes()
    return TraceData(
        info=info,
        names=builder.names.values,
        threads=builder.threads.values,
        origin_us=origin,
        kernels=builder.spans(KERNEL, origin),
        copies=builder.copies(origin),
        memsets=builder.spans(MEMSET, origin),
        runtime=builder.spans(RUNTIME, origin),
        ops=builder.spans(OP, origin),
        annotations=builder.spans(ANNOTATION, origin),
        steps=builder.step_columns.spans(origin),
        syncs=builder.spans(SYNC, origin),
        memory=spilled(builder.memory_track(origin)),
        profiler_span=None if span is None else (span[0] - origin, span[1] - origin),
        devices=[_device(p, i) for i, p in enumerate(header.deviceProperties or [])],
        op_sequence=builder.op_sequence(),
        python=builder.python_calls(origin),
        messages=builder.messages.messages(origin),
        op_shape=op_shape,
        shapes=shapes,
    )


def _by_field(*counts: dict[str, int]) -> tuple[tuple[str, int], ...]:
    """The malformed events' counts by field, most first, from the decoder and the columns."""
    total: dict[str, int] = {}
    for each in counts:
        add_counts(total, each)
    return tuple(sorted(total.items(), key=lambda item: (-item[1], item[0])))


def _rank(header: TraceHeader, path: Path) -> int | None:
    if header.distributedInfo is not None:
        rank = _int_or_none(header.distributedInfo.rank)
        if rank is not None:
            return rank
    match = _RANK_IN_NAME.search(path.name)
    return int(match.group(1)) if match else None


def _device(props: DeviceProperties, position: int) -> DeviceInfo:
    index = _int_or_none(props.id)
    return DeviceInfo(
        index=position if index is None else index,
        name=_str_or_none(props.name) or "unknown GPU",
        total_memory_bytes=_int_or_none(props.totalGlobalMem),
        compute_major=_int_or_none(props.computeMajor),
        compute_minor=_int_or_none(props.computeMinor),
        sm_count=_int_or_none(props.numSms),
    )


def _int_or_none(value: object) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    try:
        return int(str(value))
    except (TypeError, ValueError):
        return None


def _str_or_none(value: object) -> str | None:
    return value if isinstance(value, str) and value else None
