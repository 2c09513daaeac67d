"""read_trace: files on disk (.json, .json.gz) to columns, across schemas and damaged files."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.synthetic import (
    BASE_US,
    EXPECTED_STEP_US,
    Loop,
    document,
    span,
    two_step_loop,
    write_bytes,
    write_json,
)
from torchtop.analysis.summary import analyze_trace
from torchtop.errors import InputError
from torchtop.report import report_to_json
from torchtop.sessions.offline import analyze_paths
from torchtop.traces import decode, read_trace
from torchtop.traces.data import NO_ID


def breakdown_of(path: Path) -> tuple[dict[str, float], list[tuple[int, float, float]]]:
    analysis = analyze_trace(read_trace(path))
    steps = [(s.number, s.start_us, s.duration_us) for s in analysis.steps]
    return analysis.breakdown, steps


@pytest.mark.parametrize("suffix", [".json", ".json.gz"])
def test_the_2021_and_current_schemas_give_the_same_breakdown(tmp_path: Path, suffix: str) -> None:
    old = write_json(tmp_path / f"old{suffix}", document(two_step_loop("2021")))
    new = write_json(tmp_path / f"new{suffix}", document(two_step_loop("current")))
    old_breakdown, old_steps = breakdown_of(old)
    new_breakdown, new_steps = breakdown_of(new)
    assert old_steps == new_steps == [(1, 0.0, 100.0), (2, 100.0, 100.0)]
    assert old_breakdown == pytest.approx(new_breakdown)
    assert new_breakdown == pytest.approx({k: v / 100 for k, v in EXPECTED_STEP_US.items()})


def test_both_schemas_sort_events_into_the_same_kinds(tmp_path: Path) -> None:
    old = read_trace(write_json(tmp_path / "old.json", document(two_step_loop("2021"))))
    new = read_trace(write_json(tmp_path / "new.json", document(two_step_loop("current"))))
    for trace in (old, new):
        assert len(trace.steps) == 2
        assert len(trace.kernels) == 2
        assert len(trace.copies.spans) == 2
        assert len(trace.runtime) == 4
        assert len(trace.ops) == 4  # two DataLoader fetches and two convolutions
        assert trace.copies.kind.tolist() == [0, 0]  # HtoD
        assert trace.copies.pageable.tolist() == [True, True]
    np.testing.assert_array_equal(old.kernels.correlation, new.kernels.correlation)
    np.testing.assert_array_equal(old.kernels.external_id, new.kernels.external_id)


def test_external_id_is_read_in_either_spelling(tmp_path: Path) -> None:
    events = [
        span("kernel", "a", 0, 1, **{"External id": 11, "correlation": 1}),
        span("kernel", "b", 5, 1, **{"external id": 12, "correlation": 2}),
        span("kernel", "c", 9, 1, correlation=3),
    ]
    trace = read_trace(write_json(tmp_path / "t.json", document(events)))
    assert trace.kernels.external_id.tolist() == [11, 12, NO_ID]
    assert trace.kernels.correlation.tolist() == [1, 2, 3]


def test_string_and_integer_pids_and_tids_give_the_same_analysis(tmp_path: Path) -> None:
    as_ints = two_step_loop()
    as_strings = [
        {**e, "pid": str(e["pid"]), "tid": f"stream {e['tid']}" if e["pid"] == 0 else str(e["tid"])}
        for e in as_ints
    ]
    ints = write_json(tmp_path / "ints.json", document(as_ints))
    strings = write_json(tmp_path / "strings.json", document(as_strings))
    assert breakdown_of(ints) == breakdown_of(strings)
    assert read_trace(strings).kernels.device.tolist() == [0, 0]  # from args.device


def test_integers_beyond_int64_in_args_become_missing_ids_and_keep_the_event(
    tmp_path: Path,
) -> None:
    events = [
        span(
            "kernel",
            "huge",
            0,
            2,
            **{"External id": 123456789012345678901234567890, "correlation": 7},
        ),
        span("kernel", "negative", 5, 2, **{"External id": -(2**70), "correlation": 8}),
        span("kernel", "fine", 9, 2, **{"External id": 3, "correlation": 9}),
    ]
    trace = read_trace(write_json(tmp_path / "t.json", document(events)))
    assert trace.kernels.external_id.tolist() == [NO_ID, NO_ID, 3]
    assert trace.kernels.correlation.tolist() == [7, 8, 9]
    assert trace.info.dropped_malformed == 0


def test_unquoted_na_values_are_repaired_and_noted(tmp_path: Path) -> None:
    events = [json.dumps(e) for e in two_step_loop()]
    # Break the first kernel's args the way some Kineto versions wrote them.
    first_kernel = next(i for i, e in enumerate(events) if '"cat": "kernel"' in e)
    events[first_kernel] = events[first_kernel].replace('"stream": 7', '"stream": N/A')
    doc = ('{"traceEvents": [' + ", ".join(events) + "]}").encode()
    path = write_bytes(tmp_path / "na.json", doc)
    trace = read_trace(path)
    assert len(trace.kernels) == 2
    assert trace.info.repaired
    assert any("repaired" in note for note in analyze_trace(trace).notes)
    clean = write_json(tmp_path / "clean.json", document(two_step_loop()))
    assert breakdown_of(path) == breakdown_of(clean)


def test_a_repair_in_the_last_event_is_noted_too(tmp_path: Path) -> None:
    doc = (
        b'{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, '
        b'"ts": 1, "dur": 2, "args": {"External id": N/A, "correlation": 5}}]}'
    )
    trace = read_trace(write_bytes(tmp_path / "na.json", doc))
    assert len(trace.kernels) == 1
    assert trace.info.repaired


def test_invalid_utf8_in_a_name_keeps_the_event(tmp_path: Path) -> None:
    events = [json.dumps(e) for e in two_step_loop()]
    doc = ('{"traceEvents": [' + ", ".join(events) + "]}").encode()
    doc = doc.replace(b"volta_sgemm", b"volta\xff\xfesgemm", 1)
    trace = read_trace(write_bytes(tmp_path / "utf.json", doc))
    assert len(trace.kernels) == 2
    assert "volta\ufffd\ufffdsgemm_128x64_nn" in trace.names
    assert "volta_sgemm_128x64_nn" in trace.names


def test_keys_after_the_event_array_are_used(tmp_path: Path) -> None:
    doc = {
        "traceEvents": two_step_loop(),
        "traceName": "written last",
        "distributedInfo": {"backend": "nccl", "rank": 3, "world_size": 4},
        "deviceProperties": [
            {"id": 0, "name": "NVIDIA A100", "totalGlobalMem": 40 << 30, "computeMajor": 8}
        ],
    }
    trace = read_trace(write_json(tmp_path / "worker.json", doc))
    assert trace.info.rank == 3
    assert trace.info.world_size == 4
    assert trace.info.backend == "nccl"
    assert [d.name for d in trace.devices] == ["NVIDIA A100"]
    assert trace.devices[0].compute_major == 8


def test_a_header_key_of_unexpected_type_before_the_events_is_noted_and_skipped(
    tmp_path: Path,
) -> None:
    doc = {"deviceProperties": "not a list", "traceEvents": two_step_loop()}
    trace = read_trace(write_json(tmp_path / "odd.json", doc))
    assert trace.info.events_total == len(two_step_loop())
    assert not trace.info.truncated
    assert trace.devices == []
    assert any("keys before traceEvents" in note for note in trace.info.notes)


@pytest.mark.parametrize(
    "keys",
    [{"deviceProperties": "not a list"}, {"distributedInfo": {"rank": [0]}}],
    ids=["deviceProperties", "distributedInfo"],
)
def test_a_header_key_of_unexpected_type_after_the_events_is_not_taken_for_truncation(
    tmp_path: Path, keys: dict[str, Any]
) -> None:
    trace = read_trace(write_json(tmp_path / "odd.json", {"traceEvents": two_step_loop(), **keys}))
    assert trace.info.events_total == len(two_step_loop())
    assert not trace.info.truncated
    assert trace.info.lost_bytes == 0


def test_a_bare_json_array_reads_like_the_object_form(tmp_path: Path) -> None:
    bare = write_json(tmp_path / "bare.json", two_step_loop())
    wrapped = write_json(tmp_path / "wrapped.json", document(two_step_loop()))
    assert breakdown_of(bare) == breakdown_of(wrapped)
    assert read_trace(bare).info.events_total == len(two_step_loop())


def test_fractional_timestamps_keep_their_sub_microsecond_precision(tmp_path: Path) -> None:
    # Quarter microseconds are exact in float64 at today's epoch-µs timestamps (~1.7e15).
    events = [
        span("cpu_op", "aten::mm", 0.5, 30.25),
        span("kernel", "k1", 10.25, 0.5, correlation=1),
        span("kernel", "k2", 20.75, 1.25, correlation=2),
    ]
    trace = read_trace(write_json(tmp_path / "ns.json", document(events)))
    assert trace.origin_us == BASE_US
    assert trace.kernels.start_us.tolist() == [10.25, 20.75]
    assert trace.kernels.dur_us.tolist() == [0.5, 1.25]
    assert trace.ops.end_us.tolist() == [30.75]


def test_nanosecond_durations_survive_epoch_timestamps(tmp_path: Path) -> None:
    events = [
        span("kernel", "k1", 20.75, 1.28, correlation=1),
        span("kernel", "k2", 21.0, 0.125, correlation=2),
    ]
    trace = read_trace(write_json(tmp_path / "ns.json", document(events)))
    assert trace.kernels.dur_us.tolist() == pytest.approx([1.28, 0.125], abs=1e-6)


def test_events_longer_than_a_day_or_negative_are_dropped_and_counted(tmp_path: Path) -> None:
    events = [
        *two_step_loop(),
        span("kernel", "runaway", 10, 2 * 86_400e6, correlation=1000),
        span("cpu_op", "backwards", 10, -5),
    ]
    path = write_json(tmp_path / "corrupt.json", document(events))
    trace = read_trace(path)
    assert trace.info.dropped_corrupt == 2
    assert "runaway" not in trace.names
    assert len(trace.kernels) == 2
    analysis = analyze_trace(trace)
    assert any("dropped 2 corrupt" in note for note in analysis.notes)
    clean = write_json(tmp_path / "clean.json", document(two_step_loop()))
    assert breakdown_of(path) == breakdown_of(clean)


def test_a_plain_json_cut_mid_event_keeps_every_whole_event_and_the_report_says_so(
    tmp_path: Path,
) -> None:
    events = two_step_loop()
    texts = [json.dumps(e) for e in events]
    head = '{"schemaVersion": 1, "traceEvents": ['
    doc = head + ", ".join(texts) + "]}"
    kept = len(events) - 2
    cut = doc.index(texts[kept]) + len(texts[kept]) // 2  # the middle of event `kept`
    path = write_bytes(tmp_path / "cut.json", doc[:cut].encode())
    trace = read_trace(path)
    assert trace.info.truncated
    assert trace.info.lost_bytes > 0
    assert trace.info.events_total == kept
    report = report_to_json(analyze_paths([str(path)]))
    assert report["traces"][0]["truncated"] is True
    assert any("truncated" in note for note in report["notes"])


def _gzip_cut(tmp_path: Path, events: list[dict[str, Any]], keep_fraction: float) -> Path:
    packed = gzip.compress(json.dumps(document(events)).encode())
    path = tmp_path / "cut.json.gz"
    path.write_bytes(packed[: int(len(packed) * keep_fraction)])
    return path


def many_kernels(count: int) -> list[dict[str, Any]]:
    loop = Loop().step(1, 0, 10 * count + 100)
    for i in range(count):
        loop.launch(10 * i, 2, device_ts=10 * i + 3, device_dur=4, name=f"kernel_{i}")
    return loop.events


def test_a_truncated_gz_keeps_the_events_inflated_before_the_damage(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(decode, "BLOCK_BYTES", 4096)
    trace = read_trace(_gzip_cut(tmp_path, many_kernels(2000), 0.5))
    assert trace.info.truncated
    assert trace.info.lost_bytes > 0
    assert 0 < len(trace.kernels) < 2000
    # What was kept is a prefix of the file: kernel_0, kernel_1, ... in order.
    names = [trace.names[c] for c in trace.kernels.name.tolist()]
    assert names == [f"kernel_{i}" for i in range(len(names))]
    assert any("truncated" in note for note in analyze_trace(trace).notes)


def test_a_small_truncated_gz_keeps_every_whole_event_before_the_cut(tmp_path: Path) -> None:
    trace = read_trace(_gzip_cut(tmp_path, many_kernels(2000), 0.5))
    assert trace.info.truncated
    assert trace.info.lost_bytes > 0
    assert len(trace.kernels) > 500


def test_a_file_whose_events_are_all_unknown_still_reads(tmp_path: Path) -> None:
    events = [{"ph": "M", "name": "process_name", "pid": 1, "tid": 0, "args": {"name": "python"}}]
    trace = read_trace(write_json(tmp_path / "meta.json", document(events)))
    assert trace.info.events_total == 1
    assert len(trace.kernels) == len(trace.ops) == 0


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (b"", "empty file"),
        (b"not json at all", "not JSON"),
        (b'{"a": 1}', "not a PyTorch trace"),
        (b'{"traceEvents": []}', "no events"),
        (
            b'{"traceEvents": [{"ph": "X", "cat": "kernel", "na',
            "truncated before its first whole event",
        ),
    ],
)
def test_unreadable_files_raise_one_input_error_naming_the_file(
    tmp_path: Path, content: bytes, problem: str
) -> None:
    path = tmp_path / "bad.json"
    path.write_bytes(content)
    with pytest.raises(InputError) as caught:
        read_trace(path)
    assert str(path) in str(caught.value)
    assert problem in str(caught.value)
    assert "\n" not in str(caught.value)
