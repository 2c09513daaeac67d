"""Reading on two cores: a forked worker decodes the first part of the file, and the result is
exactly what one process reading alone gets; a worker that fails costs a re-read, never a
result."""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import os
import random
import re
import signal
import threading
from pathlib import Path
from typing import Any, BinaryIO, cast

import msgspec
import numpy as np
import pytest

from tests.conftest import RESNET_NW0, python_run
from tests.traces.test_decode import named, tricky_events
from torchtop.cli import main
from torchtop.errors import InputError
from torchtop.traces import decode, parallel, read_trace, reader
from torchtop.traces.data import TraceData
from torchtop.traces.decode import _cut_outside_strings, _even_quotes

pytestmark = pytest.mark.skipif(
    not hasattr(os, "fork") or os.uname().sysname != "Linux", reason="the worker is Linux-only"
)


@pytest.fixture(autouse=True)
def small_pieces(monkeypatch: pytest.MonkeyPatch) -> None:
    """Pieces of a few KB, so that a small file makes dozens, half of them the worker's."""
    monkeypatch.setattr(parallel, "PIECE_BYTES", 3000)


def read_with(path: Path, workers: str, monkeypatch: pytest.MonkeyPatch) -> TraceData:
    monkeypatch.setenv(parallel.WORKERS_ENV, workers)
    return read_trace(path)


def assert_same_trace(one: TraceData, other: TraceData) -> None:
    """Field by field: arrays equal, element for element; everything else equal."""
    assert one.names == other.names
    assert one.threads == other.threads
    assert one.info == other.info
    assert one.origin_us == other.origin_us
    assert one.profiler_span == other.profiler_span
    for field in TraceData.__struct_fields__:
        mine, theirs = getattr(one, field), getattr(other, field)
        if isinstance(mine, msgspec.Struct):
            for inner in mine.__struct_fields__:
                a, b = getattr(mine, inner), getattr(theirs, inner)
                if isinstance(a, msgspec.Struct):
                    for leaf in a.__struct_fields__:
                        np.testing.assert_array_equal(getattr(a, leaf), getattr(b, leaf))
                else:
                    np.testing.assert_array_equal(a, b, err_msg=f"{field}.{inner}")


def busy_trace(count: int) -> dict[str, Any]:
    """A trace of every kind the reader keeps, names that make false boundaries included, and
    names that first appear late in the file (so the worker meets them before the reader)."""
    events: list[dict[str, Any]] = []
    op_names = ("aten::op{}", "late name {}")
    for i, event in enumerate(tricky_events(count)):
        base = 1_700_000_000_000_000 + 100 * i
        event["ts"] = base
        events.append(event)
        events.append(
            {
                "ph": "X",
                "cat": "cpu_op",
                "name": op_names[i > count * 3 // 4].format(i % 7),
                "pid": 1,
                "tid": i % 3,
                "ts": base,
                "dur": 50,
                "args": {"External id": i},
            }
        )
        events.append(
            {
                "ph": "X",
                "cat": "cuda_runtime",
                "name": "cudaLaunchKernel",
                "pid": 1,
                "tid": 0,
                "ts": base + 1,
                "dur": 2,
                "args": {"correlation": i, "External id": i},
            }
        )
        if i % 10 == 0:
            events.append(
                {
                    "ph": "X",
                    "cat": "user_annotation",
                    "name": f"ProfilerStep#{i // 10}",
                    "pid": 1,
                    "tid": 0,
                    "ts": base,
                    "dur": 1000,
                }
            )
            events.append(
                {
                    "ph": "X",
                    "cat": "gpu_memcpy",
                    "name": "Memcpy HtoD (Pageable -> Device)",
                    "pid": 0,
                    "tid": 7,
                    "ts": base + 3,
                    "dur": 4,
                    "args": {"correlation": i, "bytes": 4096, "device": 0},
                }
            )
            events.append(
                {
                    "ph": "i",
                    "name": "[memory]",
                    "pid": 1,
                    "tid": 0,
                    "ts": base,
                    "s": "t",
                    "args": {
                        "Device Type": 1,
                        "Device Id": 0,
                        "Bytes": 512,
                        "Total Allocated": 512 * i,
                    },
                }
            )
    events.append(
        {
            "ph": "X",
            "cat": "Trace",
            "name": "PyTorch Profiler (0)",
            "pid": 1,
            "tid": 0,
            "ts": 1_700_000_000_000_000,
            "dur": 100 * count,
        }
    )
    return {"schemaVersion": 1, "traceEvents": events, "traceName": "busy"}


@pytest.mark.parametrize("suffix", [".json", ".json.gz"])
def test_two_processes_read_exactly_what_one_reads(
    tmp_path: Path, suffix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(decode, "BLOCK_BYTES", 4096)  # dozens of pieces, half to the worker
    data = json.dumps(busy_trace(600), indent=1).encode()
    path = tmp_path / f"busy{suffix}"
    path.write_bytes(gzip.compress(data) if suffix.endswith(".gz") else data)
    alone = read_with(path, "1", monkeypatch)
    together = read_with(path, "2", monkeypatch)
    assert len(alone.kernels) == 601 and len(alone.steps) == 61 and len(alone.memory.ts_us) == 61
    assert any(n.startswith("late name") for n in alone.names)
    assert_same_trace(alone, together)


def test_the_real_35_mb_trace_reads_the_same_on_two_cores(
    shared: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = shared / RESNET_NW0
    assert_same_trace(read_with(path, "1", monkeypatch), read_with(path, "2", monkeypatch))


def test_repairs_made_by_the_worker_are_counted_with_the_readers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(decode, "BLOCK_BYTES", 2048)
    events = busy_trace(200)["traceEvents"]
    text = json.dumps({"traceEvents": events}, indent=1)
    # An unquoted N/A for every id ending in 5: pieces on both sides need a repair.
    text = re.sub(r'("External id": )\d*5(?=\D)', r"\1N/A", text)
    assert text.count("N/A") > 20
    path = tmp_path / "damaged.json"
    path.write_text(text)
    alone = read_with(path, "1", monkeypatch)
    together = read_with(path, "2", monkeypatch)
    assert alone.info.repaired and together.info.repaired
    assert_same_trace(alone, together)


def test_malformed_json_in_a_workers_piece_is_one_line_naming_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(decode, "BLOCK_BYTES", 2048)
    text = json.dumps(busy_trace(200), indent=1)
    middle = text.index('"name"', len(text) // 2)
    path = tmp_path / "broken.json"
    path.write_text(text[:middle] + '"name" :: ' + text[middle + 7 :])
    errors = []
    for workers in ("1", "2"):
        with pytest.raises(InputError) as caught:
            read_with(path, workers, monkeypatch)
        errors.append(str(caught.value))
    assert all(str(path) in e and "malformed JSON" in e and "\n" not in e for e in errors)


def test_a_worker_that_dies_costs_a_reread_not_the_result(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(decode, "BLOCK_BYTES", 4096)
    path = tmp_path / "busy.json"
    path.write_text(json.dumps(busy_trace(400), indent=1))
    alone = read_with(path, "1", monkeypatch)
    started: list[int] = []
    real_init = parallel.Worker.__init__

    def start_then_kill(self: parallel.Worker, path: Path, compressed: bool, size: int) -> None:
        real_init(self, path, compressed, size)
        started.append(self.pid)
        os.kill(self.pid, signal.SIGKILL)  # the worker really dies, before its first piece

    monkeypatch.setattr(parallel.Worker, "__init__", start_then_kill)
    together = read_with(path, "2", monkeypatch)
    assert len(started) == 1
    with pytest.raises(ChildProcessError):
        os.waitpid(started[0], os.WNOHANG)  # reaped: no zombie left behind
    assert_same_trace(alone, together)


@pytest.mark.parametrize(
    ("text", "even"),
    [
        (b'{"a": "b"}', True),
        (b'{"a": "b', False),
        (b'{"a": "say \\"hi\\""}', True),
        (b'{"a": "say \\"hi', False),
        (b'{"a": "ends in a backslash \\\\"}', True),
        (b'{"a": "three \\\\\\" still open', False),
        (b'{"a": "four \\\\\\\\"}, {"b": 1}', True),
    ],
)
def test_quote_parity_counts_only_unescaped_quotes(text: bytes, even: bool) -> None:
    assert _even_quotes(text, 0, len(text)) is even


def test_a_cut_is_never_placed_inside_a_string() -> None:
    events = [{"name": "a"}, {"name": 'x"}, {"y'}, {"name": "tail}, {more"}]
    doc = bytearray(b"[" + json.dumps(events)[1:].encode())
    cut = _cut_outside_strings(doc, len(doc))
    assert cut is not None
    assert json.loads(b"[" + doc[1:cut] + b"]") == events[:2]


def test_analyze_starts_a_big_file_before_its_imports_and_the_reader_takes_it_over(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(decode, "BLOCK_BYTES", 4096)
    path = tmp_path / "busy.json.gz"
    path.write_bytes(gzip.compress(json.dumps(busy_trace(300), indent=1).encode()))
    taken: list[parallel.OpenTrace | None] = []
    real_take = parallel.take_early_start

    def take(target: Path) -> parallel.OpenTrace | None:
        taken.append(real_take(target))
        return taken[-1]

    monkeypatch.setattr(reader, "take_early_start", take)
    monkeypatch.setenv(parallel.WORKERS_ENV, "2")
    early = analyze_json_uncached(path)
    monkeypatch.setenv(parallel.WORKERS_ENV, "1")
    alone = analyze_json_uncached(path)
    assert taken[0] is not None and taken[0].compressed and taken[0].worker is not None
    # Alone, a .gz still starts inflating before the imports; only the worker is left out.
    assert taken[1] is not None and taken[1].worker is None and taken[1].inflater is not None
    assert early == alone
    assert not parallel._EARLY


def test_an_early_start_nobody_takes_is_stopped_at_exit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "busy.json"
    path.write_text(json.dumps(busy_trace(50)))
    monkeypatch.setenv(parallel.WORKERS_ENV, "2")
    parallel.start_early([str(path)])
    early = parallel._EARLY[os.path.realpath(path)]
    parallel.discard_early_starts()
    assert early.raw.closed and not parallel._EARLY
    assert early.worker is not None
    with pytest.raises(ChildProcessError):
        os.waitpid(early.worker.pid, os.WNOHANG)


def analyze_json_uncached(path: Path) -> Any:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["analyze", str(path), "--format", "json"]) == 0
    return json.loads(out.getvalue())


class ChunkyStream(io.RawIOBase):
    """A stream whose reads return pieces of random sizes, as a pipe or an inflater would."""

    def __init__(self, data: bytes, seed: int) -> None:
        self.data, self.position, self.random = data, 0, random.Random(seed)

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        step = self.random.randint(1, 9000)
        chunk = self.data[self.position : self.position + step]
        self.position += len(chunk)
        return chunk


def test_readers_sharing_a_file_cut_the_same_pieces_however_their_reads_fall() -> None:
    events = busy_trace(300)["traceEvents"]
    doc = json.dumps({"traceEvents": events, "traceName": "t"}, indent=1).encode()
    everything: list[tuple[int, str]] = []
    pieces: dict[bool, list[int]] = {True: [], False: []}
    for first, seed in ((True, 1), (False, 2)):
        share = decode.Share(split=len(doc) // 3, first=first, piece_bytes=2500)
        stream = decode.EventStream(cast(BinaryIO, ChunkyStream(doc, seed)), share=share)
        for batch in stream:
            pieces[first].append(stream.piece)
            everything += [(stream.piece, str(e.name)) for e in named(batch)]
    assert len(pieces[True]) > 10 and len(pieces[False]) > 20
    assert max(pieces[True]) < min(pieces[False])
    everything.sort(key=lambda pair: pair[0])  # stable: file order within a piece
    assert [name for _, name in everything] == [str(e["name"]) for e in events]


def test_two_cores_only_where_they_pay_and_nothing_else_runs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(parallel.WORKERS_ENV, raising=False)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1})
    monkeypatch.setattr(threading, "active_count", lambda: 1)
    mib = 1 << 20
    assert parallel.parallel_worth_it(35 * mib) and not parallel.parallel_worth_it(5 * mib)
    # A .gz is inflated whole by the reader anyway: once the imports are done, only a big one
    # is worth the second core; before them (`analyze`'s early start) the worker reads while
    # the reader imports, and a smaller one gains too.
    assert not parallel.parallel_worth_it(35 * mib, compressed=True)
    assert parallel.parallel_worth_it(200 * mib, compressed=True)
    assert parallel.parallel_worth_it(60 * mib, compressed=True, early=True)
    assert not parallel.parallel_worth_it(35 * mib, compressed=True, early=True)
    assert parallel.parallel_worth_it(15 * mib, early=True)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0})
    assert not parallel.parallel_worth_it(200 * mib)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1})
    monkeypatch.setattr(threading, "active_count", lambda: 3)  # a dashboard, say
    assert not parallel.parallel_worth_it(200 * mib)


def test_a_worker_with_a_head_start_takes_the_bigger_part() -> None:
    mib = 1 << 20
    assert parallel.worker_split(100 * mib) == 50 * mib  # no head start: the middle
    early = parallel.worker_split(35 * mib, parallel.HEAD_START_BYTES)
    assert 35 * mib / 2 < early < 35 * mib * parallel.MAX_WORKER_SHARE
    # The head start matters less as the file grows, and the reader always keeps some.
    assert parallel.worker_split(1000 * mib, parallel.HEAD_START_BYTES) / (1000 * mib) < 0.51
    small = parallel.worker_split(2 * mib, parallel.HEAD_START_BYTES)
    assert small == int(2 * mib * parallel.MAX_WORKER_SHARE)


def test_the_early_worker_is_forked_before_numpy_and_msgspec_are_imported(
    tmp_path: Path,
) -> None:
    """What makes the early start pay: the worker imports what it needs while the reader
    imports the rest, instead of after it."""
    path = tmp_path / "busy.json.gz"
    path.write_bytes(gzip.compress(json.dumps(busy_trace(50)).encode()))
    code = (
        "import sys\n"
        "from torchtop.traces import parallel\n"
        "parallel.start_early(sys.argv[1:])\n"
        "opened = next(iter(parallel._EARLY.values()))\n"
        "print(opened.worker is not None, 'numpy' in sys.modules, 'msgspec' in sys.modules)\n"
    )
    env = {**os.environ, parallel.WORKERS_ENV: "2"}
    result = python_run(code, str(path), env=env)
    assert result.stdout.split() == ["True", "False", "False"]
