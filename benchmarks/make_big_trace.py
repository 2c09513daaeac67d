"""Build a >= 1 GB Kineto trace out of the real steps of a small one.

What it makes, and why: the speed benchmark (``benchmarks/analyze_speed.py``)
needs a trace of the size real long profiling sessions produce (a gigabyte
and more) that still looks, event by event, like a real Kineto trace.  So
rather than synthesising events, this script takes the *profiled steps* of a
real trace (by default the tb-plugin ResNet-50 ``num_workers=0`` sample:
ProfilerStep#5..#10, 35 MB unpacked) and repeats them end to end:

* the **body** is every event between the start of the first ``ProfilerStep``
  and the end of the last one (operators, CUDA runtime calls, flow ``s``
  events, ``[memory]`` instants, ...) plus the GPU-side events those in-span
  events launched (kernels, memcpy/memset, flow ``f``), which on a GPU that
  lags the CPU run past the end of the last step;
* everything else is written once: metadata (``ph: M``) and the events before
  the first step at the start, the events after the last step (profiler
  teardown, ``Record Window End``) at the end, shifted behind the last copy;
* copy ``k`` of the body has ``ts`` shifted by ``k * period``, where the
  period is the longest extent the body covers on any single lane
  (pid, tid): so no thread or CUDA stream ever gets two copies' events
  overlapping (the GPU tail of one copy ends before the next copy's first
  kernel), and the CPU sees a short idle gap between copies;
* ``ProfilerStep#N`` is renumbered ``N + k * steps`` so step numbers keep
  increasing, and ids that must stay unique are offset per copy by a stride
  larger than any original id: ``correlation`` and flow ``id`` (same stride,
  so they keep matching), ``External id``/``external id`` (one stride, they
  share a namespace), and ``Sequence number`` (forward/backward pairing);
* the top-level ``schemaVersion``, ``deviceProperties`` etc. are kept once,
  and the ``PyTorch Profiler (0)`` trace span is stretched over all copies.

The output is written streaming, one copy at a time (each copy's events are
re-serialised with ``json.dumps`` after patching the shared dicts in place),
so memory stays at a few hundred MB whatever the target size.  One event per
line, which also keeps line-oriented scanners (HTA's rank sniffing) sane.

Usage::

    python benchmarks/make_big_trace.py [--out PATH] [--target-gb 1.05] [--gzip]
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import re
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

REPO = Path(__file__).resolve().parent.parent
DEFAULT_SOURCE = Path(
    "/work/shared/traces/kineto-tb-plugin/resnet50_num_workers_0/"
    "worker0.1623143089861.pt.trace.json.gz"
)
DEFAULT_OUT = REPO / "benchmarks" / "out" / "big_trace.json"
GB = 1_000_000_000

STEP_RE = re.compile(r"^ProfilerStep#(\d+)$")
# Arg keys whose values must stay unique per copy, grouped by shared namespace.
CORRELATION_KEYS = ("correlation",)
EXTERNAL_KEYS = ("External id", "external id")
SEQUENCE_KEYS = ("Sequence number",)
FLOW_PHASES = frozenset({"s", "t", "f"})

Event = dict[str, Any]


@dataclass
class Split:
    """The source trace cut into what is written once and what is repeated."""

    header: dict[str, Any]
    prefix: list[Event]
    body: list[Event]
    suffix: list[Event]
    period: int | float
    steps_per_copy: int


@dataclass
class Patch:
    """One field of one body event that changes from copy to copy."""

    target: dict[str, Any]
    key: str
    base: Any
    stride: int | float


@dataclass
class CopyWriter:
    """Rewrites the body in place for copy ``k`` and serialises it."""

    body: list[Event]
    patches: list[Patch] = field(default_factory=list)
    step_names: list[tuple[Event, int]] = field(default_factory=list)
    steps_per_copy: int = 0

    def render(self, k: int) -> str:
        for p in self.patches:
            p.target[p.key] = p.base + k * p.stride
        for event, number in self.step_names:
            event["name"] = f"ProfilerStep#{number + k * self.steps_per_copy}"
        return render_events(self.body)


def render_events(events: list[Event]) -> str:
    dumps = json.JSONEncoder(ensure_ascii=False).encode
    return "".join(f",\n  {dumps(e)}" for e in events)


def load_trace(path: Path) -> dict[str, Any]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as fh:
        data: dict[str, Any] = json.loads(fh.read())
    return data


def link_id(event: Event) -> Any:
    """The correlation that ties a CPU launch to its GPU work, if any."""
    if event.get("ph") in FLOW_PHASES:
        return event.get("id")
    args = event.get("args")
    return args.get("correlation") if isinstance(args, dict) else None


def step_window(events: list[Event]) -> tuple[Any, Any, int]:
    steps = [e for e in events if e.get("ph") == "X" and STEP_RE.match(str(e.get("name", "")))]
    if not steps:
        raise SystemExit("source trace has no ProfilerStep#N events")
    start = min(e["ts"] for e in steps)
    end = max(e["ts"] + e.get("dur", 0) for e in steps)
    numbers = [int(STEP_RE.match(e["name"]).group(1)) for e in steps]  # type: ignore[union-attr]
    return start, end, max(numbers) - min(numbers) + 1


def lane_period(body: list[Event], cpu_span: int | float) -> int | float:
    """Longest extent of the body on one (pid, tid) lane, at least the step span."""
    lanes: dict[tuple[str, str], list[Any]] = {}
    for e in body:
        begin, end = e["ts"], e["ts"] + e.get("dur", 0)
        lane = lanes.setdefault((str(e.get("pid")), str(e.get("tid"))), [begin, end])
        lane[0], lane[1] = min(lane[0], begin), max(lane[1], end)
    widest = max((hi - lo for lo, hi in lanes.values()), default=0)
    period = max(cpu_span, widest)
    return period + 1 if isinstance(period, int) else math.nextafter(period, math.inf)


def split_trace(trace: dict[str, Any]) -> Split:
    events: list[Event] = trace["traceEvents"]
    t0, t1, steps = step_window(events)
    timed = [e for e in events if e.get("ph") != "M" and "ts" in e]
    in_span = [e for e in timed if t0 <= e["ts"] < t1]
    links = {link_id(e) for e in in_span} - {None}
    in_span_ids = {id(e) for e in in_span}
    body = [e for e in timed if id(e) in in_span_ids or (e["ts"] >= t1 and link_id(e) in links)]
    body_ids = {id(e) for e in body}
    prefix = [
        e
        for e in events
        if id(e) not in body_ids and (e.get("ph") == "M" or "ts" not in e or e["ts"] < t0)
    ]
    prefix_ids = {id(e) for e in prefix}
    suffix = [e for e in events if id(e) not in body_ids and id(e) not in prefix_ids]
    header = {k: v for k, v in trace.items() if k != "traceEvents"}
    return Split(header, prefix, body, suffix, lane_period(body, t1 - t0), steps)


def max_arg(events: list[Event], keys: tuple[str, ...]) -> int:
    values = [
        v
        for e in events
        if isinstance(e.get("args"), dict)
        for k in keys
        if isinstance(v := e["args"].get(k), int)
    ]
    return max(values, default=0)


def build_copy_writer(split: Split, all_events: list[Event]) -> CopyWriter:
    flow_max = max(
        (
            e["id"]
            for e in all_events
            if e.get("ph") in FLOW_PHASES and isinstance(e.get("id"), int)
        ),
        default=0,
    )
    corr_stride = max(flow_max, max_arg(all_events, CORRELATION_KEYS)) + 1
    arg_strides = {k: corr_stride for k in CORRELATION_KEYS}
    arg_strides.update({k: max_arg(all_events, EXTERNAL_KEYS) + 1 for k in EXTERNAL_KEYS})
    arg_strides.update({k: max_arg(all_events, SEQUENCE_KEYS) + 1 for k in SEQUENCE_KEYS})
    writer = CopyWriter(split.body, steps_per_copy=split.steps_per_copy)
    for e in split.body:
        writer.patches.append(Patch(e, "ts", e["ts"], split.period))
        if e.get("ph") in FLOW_PHASES and isinstance(e.get("id"), int):
            writer.patches.append(Patch(e, "id", e["id"], corr_stride))
        args = e.get("args")
        if isinstance(args, dict):
            for key, stride in arg_strides.items():
                if isinstance(args.get(key), int) and args[key] >= 0:
                    writer.patches.append(Patch(args, key, args[key], stride))
        match = STEP_RE.match(str(e.get("name", "")))
        if match:
            writer.step_names.append((e, int(match.group(1))))
    return writer


def shift_suffix(suffix: list[Event], shift: int | float) -> None:
    for e in suffix:
        if "ts" in e:
            e["ts"] += shift


def stretch_trace_span(prefix: list[Event], extra: int | float) -> None:
    for e in prefix:
        if e.get("cat") == "Trace" and e.get("ph") == "X" and "dur" in e:
            e["dur"] += extra


def render_header(header: dict[str, Any]) -> str:
    fields = "".join(
        f"  {json.dumps(k)}: {json.dumps(v, ensure_ascii=False)},\n" for k, v in header.items()
    )
    return "{\n" + fields + '  "traceEvents": ['


def open_output(path: Path, use_gzip: bool) -> IO[bytes]:
    path.parent.mkdir(parents=True, exist_ok=True)
    if use_gzip:
        return gzip.open(path, "wb", compresslevel=6)  # type: ignore[return-value]
    return open(path, "wb", buffering=8 << 20)


def write_big_trace(
    source: Path, out: Path, target_bytes: int, use_gzip: bool
) -> tuple[int, int, int]:
    """Write the trace; returns (uncompressed bytes, events, copies)."""
    trace = load_trace(source)
    all_events: list[Event] = trace["traceEvents"]
    split = split_trace(trace)
    if not split.prefix:
        raise SystemExit(
            "source trace has no metadata or pre-step events to open the event list with"
        )
    writer = build_copy_writer(split, all_events)
    first = writer.render(0).encode()
    fixed = (
        len(render_header(split.header))
        + len(render_events(split.prefix))
        + len(render_events(split.suffix))
        + 4
    )
    copies = max(1, math.ceil((target_bytes - fixed) / len(first)))
    stretch_trace_span(split.prefix, (copies - 1) * split.period)
    shift_suffix(split.suffix, (copies - 1) * split.period)
    head = render_header(split.header) + render_events(split.prefix)[1:]
    written = 0
    with open_output(out, use_gzip) as fh:
        for chunk in (head.encode(), first):
            written += fh.write(chunk)
        del first
        for k in range(1, copies):
            written += fh.write(writer.render(k).encode())
            print(f"  copy {k + 1}/{copies}: {written / GB:.2f} GB", file=sys.stderr, end="\r")
        written += fh.write((render_events(split.suffix) + "\n]}\n").encode())
    print(file=sys.stderr)
    events = len(split.prefix) + copies * len(split.body) + len(split.suffix)
    return written, events, copies


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--source",
        type=Path,
        default=DEFAULT_SOURCE,
        help="real Kineto trace whose steps are repeated",
    )
    ap.add_argument(
        "--out",
        type=Path,
        default=None,
        help=f"output path (default {DEFAULT_OUT.relative_to(REPO)}[.gz])",
    )
    ap.add_argument(
        "--target-gb",
        type=float,
        default=1.05,
        help="minimum uncompressed size, GB = 1e9 bytes (default 1.05)",
    )
    ap.add_argument("--gzip", action="store_true", help="write gzip-compressed .json.gz")
    return ap.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    out: Path = args.out or (DEFAULT_OUT.with_suffix(".json.gz") if args.gzip else DEFAULT_OUT)
    started = time.perf_counter()
    size, events, copies = write_big_trace(args.source, out, int(args.target_gb * GB), args.gzip)
    elapsed = time.perf_counter() - started
    on_disk = out.stat().st_size
    print(
        f"wrote {out}: {size:,} bytes uncompressed ({size / GB:.3f} GB, {size / 2**30:.3f} GiB), "
        f"{on_disk:,} bytes on disk, {events:,} events, {copies} copies of the step span, "
        f"{elapsed:.1f} s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
