"""The streaming decoder: cuts between events, repairs, headers after the array, truncation."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest

from torchtop.traces import decode
from torchtop.traces.decode import EventStream, TraceFormatError
from torchtop.traces.schema import Event, InstantEvent, SpanEvent

TINY_BLOCK = 256


def events_of(doc: bytes) -> tuple[list[Event], EventStream, int]:
    stream = EventStream(io.BytesIO(doc))
    batches = list(stream)
    return [e for batch in batches for e in batch], stream, len(batches)


def named(events: list[Event]) -> list[SpanEvent | InstantEvent]:
    """The events, each of a phase that has a name and args (X or i): all that these documents
    hold, and a test that finds another here fails."""
    kept = [e for e in events if isinstance(e, SpanEvent | InstantEvent)]
    assert len(kept) == len(events), [type(e).__name__ for e in events]
    return kept


def kernel(i: int, name: str | None = None, **extra: Any) -> dict[str, Any]:
    return {
        "ph": "X",
        "cat": "kernel",
        "name": name if name is not None else f"k{i}",
        "pid": 0,
        "tid": 7,
        "ts": 1000 + 10 * i,
        "dur": 3,
        "args": {"correlation": i, "External id": 100 + i, **extra},
    }


def tricky_events(count: int) -> list[dict[str, Any]]:
    """Events whose strings hold what a naive splitter takes for event boundaries."""
    names = [
        "f({'a': 1}, {'b': 2})",
        "x}, {y",
        'quote \\" }, { inside',
        "}, {}, {",
        "plain",
        "ünïcødé }  ,  { spaced",
    ]
    events = [
        kernel(i, names[i % len(names)] + f" #{i}", note="}, {" * (i % 3)) for i in range(count)
    ]
    events.append(kernel(count, "the last event is plain"))
    return events


def test_a_document_much_bigger_than_a_block_decodes_to_the_same_events_as_in_one_piece(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    events = tricky_events(200)
    doc = json.dumps({"schemaVersion": 1, "traceEvents": events, "traceName": "t"}).encode()
    whole, _, whole_batches = events_of(doc)
    monkeypatch.setattr(decode, "BLOCK_BYTES", TINY_BLOCK)
    chunked, stream, batches = events_of(doc)
    assert whole_batches <= 2
    assert batches > 50  # many cuts were made
    assert chunked == whole
    assert [e.name for e in named(chunked)] == [e["name"] for e in events]
    assert stream.header.traceName == "t"
    assert not stream.stats.truncated


def test_chunked_decoding_matches_the_stdlib_json_parser(monkeypatch: pytest.MonkeyPatch) -> None:
    events = tricky_events(60)
    doc = json.dumps(events, indent=1).encode()  # a bare array, pretty-printed
    monkeypatch.setattr(decode, "BLOCK_BYTES", 1000)
    decoded, _, batches = events_of(doc)
    reference = json.loads(doc)
    assert batches > 10
    assert [(e.name, e.ts, e.dur, e.args.correlation) for e in decoded] == [  # type: ignore[union-attr]
        (r["name"], r["ts"], r["dur"], r["args"]["correlation"]) for r in reference
    ]


# The decoder cuts at the last `}` `,` `{` in its buffer and, when the piece does not parse
# (the cut was inside a string), moves to an earlier one. Each case below once broke that:
# a buffer whose only boundaries lie inside a string of an incomplete event must be read on,
# not reported as malformed JSON.


def test_a_fake_boundary_inside_the_last_event_does_not_break_chunked_decoding(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    events = [kernel(i) for i in range(20)] + [kernel(99, "f({'a': 1}, {'b': 2})")]
    doc = json.dumps({"traceEvents": events}).encode()
    whole, _, _ = events_of(doc)
    monkeypatch.setattr(decode, "BLOCK_BYTES", TINY_BLOCK)
    chunked, _, _ = events_of(doc)
    assert chunked == whole


def test_an_event_longer_than_a_block_with_a_fake_boundary_in_a_string_is_decoded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    events = [kernel(0), kernel(1, "x" * 300 + "}, {" + "y" * 300), kernel(2)]
    doc = json.dumps({"traceEvents": events}).encode()
    monkeypatch.setattr(decode, "BLOCK_BYTES", 128)
    chunked, _, _ = events_of(doc)
    assert [e.name for e in named(chunked)] == [e["name"] for e in events]


def test_a_document_cut_inside_an_event_holding_a_fake_boundary_keeps_the_events_before() -> None:
    events = [kernel(0), kernel(1, "a}, {b"), kernel(2)]
    doc, _ = whole_event_ends(events)
    cut = doc.index(b"a}, {b") + 5  # just after the fake boundary, inside event 1
    decoded, stream, _ = events_of(doc[:cut])
    assert [e.name for e in named(decoded)] == ["k0"]
    assert stream.stats.truncated


def test_an_event_with_many_fake_boundaries_in_its_strings_is_decoded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # 15 events put the second block's end ~90 false boundaries into the long event: the decoder
    # must walk back past all of them to the real boundary before it (it once gave up after 64).
    events = [kernel(i) for i in range(15)]
    events += [kernel(99, "f({'a': 1}, {'b': 2})" * 100)] + [kernel(200 + i) for i in range(25)]
    doc = json.dumps({"traceEvents": events}).encode()
    monkeypatch.setattr(decode, "BLOCK_BYTES", 2000)
    chunked, _, _ = events_of(doc)
    assert [e.name for e in named(chunked)] == [e["name"] for e in events]


def test_keys_after_the_event_array_are_read_into_the_header() -> None:
    doc = json.dumps(
        {
            "traceEvents": [kernel(0)],
            "traceName": "after-the-array",
            "distributedInfo": {"backend": "nccl", "rank": 5, "world_size": 8},
        }
    ).encode()
    decoded, stream, _ = events_of(doc)
    assert len(decoded) == 1
    assert stream.header.traceName == "after-the-array"
    assert stream.header.distributedInfo is not None
    assert stream.header.distributedInfo.rank == 5


def test_keys_before_the_event_array_are_read_into_the_header() -> None:
    doc = (
        b'{"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "A100"}], "traceEvents": []}'
    )
    _, stream, _ = events_of(doc)
    assert stream.header.schemaVersion == 1
    assert stream.header.deviceProperties is not None
    assert stream.header.deviceProperties[0].name == "A100"


def test_a_bare_json_array_is_a_trace() -> None:
    decoded, _, _ = events_of(json.dumps([kernel(0), kernel(1)]).encode())
    assert [e.name for e in named(decoded)] == ["k0", "k1"]


def test_unquoted_na_is_read_as_missing() -> None:
    doc = (
        b'{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "a", "pid": 0, "tid": 7, "ts": 1, '
        b'"dur": 2, "args": {"External id": N/A, "correlation": 5, "device": NaN}}, '
        b'{"ph": "X", "cat": "kernel", "name": "b", "pid": 0, "tid": 7, "ts": 9, "dur": 2}]}'
    )
    decoded, stream, _ = events_of(doc)
    assert [e.name for e in named(decoded)] == ["a", "b"]
    args = named(decoded)[0].args
    assert args is not None
    assert args.external_id_upper is None
    assert args.device is None
    assert args.correlation == 5
    assert stream.stats.repaired_pieces >= 1


def test_invalid_utf8_in_a_name_is_replaced_not_fatal() -> None:
    doc = b'[{"ph": "X", "cat": "kernel", "name": "conv\xff\xfekernel", "pid": 0, "tid": 7, '
    doc += b'"ts": 1, "dur": 2}]'
    decoded, _, _ = events_of(doc)
    assert named(decoded)[0].name == "conv\ufffd\ufffdkernel"


def test_an_integer_beyond_int64_in_args_does_not_lose_the_event() -> None:
    doc = (
        b'{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1, '
        b'"dur": 2, "args": {"External id": 123456789012345678901234567890, "correlation": 7}}]}'
    )
    decoded, stream, _ = events_of(doc)
    assert len(decoded) == 1
    args = named(decoded)[0].args
    assert args is not None
    assert args.correlation == 7
    assert stream.stats.dropped_malformed == 0


def test_an_event_of_unexpected_shape_is_dropped_and_counted_while_its_neighbours_are_kept() -> (
    None
):
    doc = json.dumps([kernel(0), {**kernel(1), "args": [1, 2]}, kernel(2)]).encode()
    decoded, stream, _ = events_of(doc)
    assert [e.name for e in named(decoded)] == ["k0", "k2"]
    assert stream.stats.dropped_malformed == 1


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        (b"", "empty file"),
        (b"   \n", "empty file"),
        (b"hello", "not JSON"),
        (b'{"a": 1}', "traceEvents"),
    ],
)
def test_documents_that_are_not_traces_are_refused_with_a_reason(doc: bytes, message: str) -> None:
    with pytest.raises(TraceFormatError, match=message):
        events_of(doc)


def whole_event_ends(events: list[dict[str, Any]]) -> tuple[bytes, list[int]]:
    head = '{"schemaVersion": 1, "traceEvents": ['
    texts = [json.dumps(e) for e in events]
    ends, position = [], len(head)
    for text in texts:
        ends.append(position + len(text))
        position += len(text) + 2
    return (head + ", ".join(texts) + "]}").encode(), ends


def test_a_document_cut_anywhere_keeps_exactly_the_whole_events_before_the_cut() -> None:
    events = [kernel(i, ["plain", "a}, {b", "}]}", "x}, {y}, {z"][i % 4]) for i in range(8)]
    doc, ends = whole_event_ends(events)
    first_start = ends[0] - len(json.dumps(events[0]))
    for cut in range(first_start + 1, len(doc) - 1):
        decoded, stream, _ = events_of(doc[:cut])
        whole = sum(1 for end in ends if end <= cut)
        assert [e.name for e in named(decoded)] == [e["name"] for e in events[:whole]], cut
        assert stream.stats.truncated, cut
    assert len(doc) - first_start > 800


def test_every_block_size_decodes_to_the_same_events(monkeypatch: pytest.MonkeyPatch) -> None:
    events = [*tricky_events(40), kernel(99, "the end: {'a': 1}, {'b': 2}")]
    doc = json.dumps({"traceEvents": events, "traceName": "t"}).encode()
    whole, _, _ = events_of(doc)
    assert [e.name for e in named(whole)] == [e["name"] for e in events]
    for block in (16, 61, 128, 255, 1024, 4099):
        monkeypatch.setattr(decode, "BLOCK_BYTES", block)
        chunked, stream, _ = events_of(doc)
        assert chunked == whole, block
        assert stream.header.traceName == "t"


@pytest.mark.parametrize("tail", ["", ",", ", ", "]"])
def test_a_document_cut_right_after_a_whole_event_keeps_that_event(tail: str) -> None:
    events = [kernel(i) for i in range(4)]
    doc, ends = whole_event_ends(events)
    cut = doc[: ends[2]] + tail.encode()
    decoded, stream, _ = events_of(cut)
    assert stream.stats.truncated
    assert [e.name for e in named(decoded)] == ["k0", "k1", "k2"]


def test_a_document_cut_before_its_first_whole_event_yields_nothing_but_says_truncated() -> None:
    doc, ends = whole_event_ends([kernel(0), kernel(1)])
    decoded, stream, _ = events_of(doc[: ends[0] - 5])
    assert decoded == []
    assert stream.stats.truncated


def test_events_of_unknown_or_missing_phase_are_passed_over_not_counted_as_malformed() -> None:
    flow = {"ph": "s", "cat": "ac2g", "name": "flow", "id": 1, "pid": 0, "tid": 7, "ts": 1}
    odd = [{**kernel(1), "ph": "Z"}, {k: v for k, v in kernel(2).items() if k != "ph"}]
    doc = json.dumps([kernel(0), flow, *odd, kernel(3)]).encode()
    decoded, stream, _ = events_of(doc)
    assert [type(e).__name__ for e in decoded] == ["SpanEvent", "Phase_s", "SpanEvent"]
    assert [e.name for e in decoded if isinstance(e, SpanEvent)] == ["k0", "k3"]
    assert stream.stats.dropped_malformed == 0
