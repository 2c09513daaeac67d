"""Write a trace back with torchtop's reading added as tracks, for Perfetto and Chrome tracing
(`torchtop analyze TRACE --annotate OUT`).

The original bytes are copied through block by block and never parsed: torchtop's events are
inserted right after the opening `[` of the event array, so a trace of gigabytes streams in
bounded memory and every original event stays byte for byte as it was (an object document keeps
its keys, a bare array stays an array). The added events live in a process of their own
(`ANNOTATION_PID`, beyond any Linux pid, so it never merges with the job's) named `torchtop` and
sorted above the others, and carry the category `torchtop`, which torchtop's own reader counts
nowhere: analysing the annotated file gives the report of the original.

Three threads: the steps; each step's breakdown as consecutive spans per category, in the order
the report lists them, lengths from the report's own per-step costs (so the track reads as the
report); and the findings as instant events at each step they were drawn from, evidence in args.
"""

from __future__ import annotations

import gzip
import os
import re
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import BinaryIO

import msgspec

from torchtop.errors import InputError
from torchtop.model.analysis import StepCost
from torchtop.model.findings import Finding
from torchtop.report.contract import BREAKDOWN_KEYS, finding_json
from torchtop.traces.parallel import open_trace
from torchtop.traces.schema import OWN_CATEGORY

ANNOTATION_PID = 1 << 30
"""Linux pids stop at 2**22 and Kineto's device pids are small: this one is torchtop's alone."""
STEPS_TID, BREAKDOWN_TID, FINDINGS_TID = 1, 2, 3
_THREADS = {STEPS_TID: "steps", BREAKDOWN_TID: "breakdown", FINDINGS_TID: "findings"}
_SORT_FIRST = -1_000_000
"""Kineto sorts its processes by pid-like indices (0 and up): a negative index puts ours on top."""
_COPY_BYTES = 4 << 20
_HEAD_LIMIT_BYTES = 256 << 20
_EVENTS_KEY = re.compile(rb'"traceEvents"\s*:\s*\[')
_WHITESPACE = b" \t\r\n"
_GZIP_LEVEL = 1
"""Fast: the copy is for a viewer. On the 56 MB owlv2 trace, gzip -1 took 0.87 s for 4.6 MB and
-6 (the originals' size) 1.45 s for 3.0 MB; a 1 GB trace would pay that difference 20 times."""


def annotation_events(
    steps: Sequence[StepCost], origin_us: float, findings: Sequence[Finding]
) -> list[dict[str, object]]:
    """torchtop's events for one trace file: `steps` as the analysis measured them (start
    relative to `origin_us`, the file's own clock), and the findings drawn from those steps."""
    events = _metadata(origin_us)
    for step in steps:
        start_us = origin_us + step.start_us
        events.append(_step_span(step, start_us))
        events.extend(_breakdown_spans(step, start_us))
        events.extend(_finding_marks(findings, step.number, start_us))
    if not steps:  # no step measured: the findings still show, at the trace's start
        events.extend(_finding_marks(findings, None, origin_us))
    return events


def _metadata(origin_us: float) -> list[dict[str, object]]:
    def meta(name: str, tid: int, args: dict[str, object]) -> dict[str, object]:
        place = {"pid": ANNOTATION_PID, "tid": tid, "ts": origin_us}
        return {"ph": "M", "cat": OWN_CATEGORY, "name": name} | place | {"args": args}

    events = [
        meta("process_name", 0, {"name": "torchtop"}),
        meta("process_sort_index", 0, {"sort_index": _SORT_FIRST}),
    ]
    for tid, name in _THREADS.items():
        events.append(meta("thread_name", tid, {"name": f"torchtop: {name}"}))
        events.append(meta("thread_sort_index", tid, {"sort_index": tid}))
    return events


def _span(
    tid: int, name: str, ts_us: float, dur_us: float, args: Mapping[str, object]
) -> dict[str, object]:
    place = {"pid": ANNOTATION_PID, "tid": tid, "ts": round(ts_us, 3), "dur": round(dur_us, 3)}
    return {"ph": "X", "cat": OWN_CATEGORY, "name": name} | place | {"args": args}


def _step_span(step: StepCost, start_us: float) -> dict[str, object]:
    # Not "ProfilerStep#N": tools that find steps by name alone would count each step twice.
    args: dict[str, object] = {"step": step.number, "duration_ms": round(step.duration_us / 1e3, 3)}
    for category in BREAKDOWN_KEYS:  # the shares as the report's per-step breakdown gives them
        part_us = step.parts_us.get(category, 0.0)
        args[category] = round(part_us / step.duration_us, 4) if step.duration_us else 0.0
    return _span(STEPS_TID, f"step {step.number}", start_us, step.duration_us, args)


def _breakdown_spans(step: StepCost, start_us: float) -> Iterator[dict[str, object]]:
    at_us = start_us
    for category in BREAKDOWN_KEYS:
        part_us = step.parts_us.get(category, 0.0)
        if part_us <= 0.0:
            continue
        share = round(part_us / step.duration_us, 4) if step.duration_us else None
        args = {"step": step.number, "ms": round(part_us / 1000.0, 3), "share": share}
        yield _span(BREAKDOWN_TID, category, at_us, part_us, args)
        at_us += part_us


def _finding_marks(
    findings: Sequence[Finding], step: int | None, ts_us: float
) -> Iterator[dict[str, object]]:
    for finding in findings:
        entry = finding_json(finding)
        entry.pop("why", None)  # the rule's long rationale: the report has it
        place = {"pid": ANNOTATION_PID, "tid": FINDINGS_TID, "ts": round(ts_us, 3)}
        mark = {"ph": "i", "s": "t", "cat": OWN_CATEGORY, "name": finding.title}
        yield mark | place | {"args": {"step": step, **entry}}


def check_output(out: Path, sources: Sequence[Path]) -> None:
    """InputError naming `out` unless it can be written without touching a source."""
    if out.is_dir():
        raise InputError(str(out), "--annotate names a folder, not a file to write")
    if not out.parent.is_dir():
        raise InputError(str(out), f"--annotate: no folder {out.parent}")
    if not os.access(out.parent, os.W_OK):
        raise InputError(str(out), f"--annotate: cannot write in {out.parent}")
    for source in sources:
        if out.exists() and out.samefile(source):
            raise InputError(str(out), "--annotate would overwrite the trace it reads")


def write_annotated(source: Path, out: Path, events: Sequence[dict[str, object]]) -> None:
    """Copy `source` to `out` (gzip when `out` ends in `.gz`) with `events` added to its event
    array. Written beside `out` and renamed, so a failure never leaves half a file."""
    added = b",".join(msgspec.json.encode(e) for e in events)
    partial = out.with_name(f".{out.name}.partial")
    try:
        opened = open_trace(source, parallel=False)
        try:
            with _output(partial, out.name.endswith(".gz")) as sink:
                _copy_with(opened.stream, sink, added, source)
        finally:
            opened.close()
        partial.replace(out)
    except OSError as exc:
        partial.unlink(missing_ok=True)
        raise InputError(str(out), exc.strerror or str(exc)) from None
    except BaseException:
        partial.unlink(missing_ok=True)
        raise


def _output(path: Path, compress: bool) -> BinaryIO:
    if compress:
        # mtime 0: the same trace annotates to the same bytes.
        return gzip.GzipFile(path, "wb", compresslevel=_GZIP_LEVEL, mtime=0)  # type: ignore[return-value]
    return path.open("wb")


def _copy_with(stream: BinaryIO, sink: BinaryIO, added: bytes, source: Path) -> None:
    head = b""
    while True:
        block = stream.read(_COPY_BYTES)
        head += block
        opening = _array_opening(head)
        if opening is not None or not block or len(head) > _HEAD_LIMIT_BYTES:
            break
    if opening is None:
        raise InputError(str(source), "no event array to annotate")
    # The array's first event decides the comma: an empty array gets none.
    while not head[opening:].lstrip(_WHITESPACE) and (block := stream.read(_COPY_BYTES)):
        head += block
    empty = head[opening:].lstrip(_WHITESPACE).startswith(b"]")
    sink.write(head[:opening])
    sink.write(added if empty or not added else added + b",")
    sink.write(head[opening:])
    while block := stream.read(_COPY_BYTES):
        sink.write(block)


def _array_opening(head: bytes) -> int | None:
    """Where the event array's first event may start (just after its `[`); None if not yet seen."""
    first = head.lstrip(_WHITESPACE)[:1]
    if first == b"[":
        return len(head) - len(head.lstrip(_WHITESPACE)) + 1
    match = _EVENTS_KEY.search(head)
    return match.end() if match else None


def annotated_paths(out: Path, labels: Sequence[str]) -> list[Path]:
    """Where each of several files' annotated copies goes: `OUT` itself for one file, else the
    file's label (`rank3`) before OUT's suffixes, `out.json.gz` -> `out.rank3.json.gz`."""
    if len(labels) == 1:
        return [out]
    name = out.name
    suffix = next((s for s in (".json.gz", ".json", ".gz") if name.endswith(s)), "")
    stem = name[: len(name) - len(suffix)] if suffix else name
    tags = [re.sub(r"[^A-Za-z0-9_.-]+", "", label.replace(" ", "")) for label in labels]
    if len(set(tags)) < len(tags):  # several files of one rank: their order tells them apart
        tags = [f"{tag}-{i}" for i, tag in enumerate(tags)]
    return [out.with_name(f"{stem}.{tag}{suffix}") for tag in tags]
