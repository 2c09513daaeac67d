"""Malformed traces, told truly: a fuzz corpus made from a real trace, through `torchtop analyze`.

Every case is a real profile (the matmul job's window, 115 events, 4 steps) damaged one way: cut
short, a field of the wrong type, an absurd value, events repeated, shuffled, nested deep, huge
strings. Each must be analysed with a note naming what was set aside (and only a file that was
really cut says "truncated"), or refused with one line naming the file and exit status 2; none
may raise.
"""

from __future__ import annotations

import copy
import gzip
import json
import random
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from torchtop.cli import main
from torchtop.traces import decode, parallel

SAMPLE = Path(__file__).resolve().parents[1] / "tui" / "data" / "matmul"
SAMPLE_FILE = SAMPLE / "worker0.1795945501991.pt.trace.json.gz"
SAMPLE_STEPS = 4
PIECE_BYTES = 3000

Doc = dict[str, Any]


class Case(NamedTuple):
    name: str
    data: bytes
    expect: str | None
    """A phrase the report's notes must hold; None: nothing set aside (a note may still say
    more, but none may say "truncated")."""
    suffix: str = ".json"
    piece_bytes: int = PIECE_BYTES
    """The reader's pieces: a few KB (the 30 KB sample becomes about ten), so that damage
    falls both in the middle of the event array and in its last piece, read another way."""


def sample() -> Doc:
    loaded: Doc = json.loads(gzip.decompress(SAMPLE_FILE.read_bytes()))
    return loaded


def encode(doc: object) -> bytes:
    return json.dumps(doc).encode()


def spans(doc: Doc) -> list[dict[str, Any]]:
    """The complete events (`ph` X) of the profile's operators and steps: the ones read."""
    return [e for e in doc["traceEvents"] if e.get("ph") == "X" and e.get("cat") != "Trace"]


def every_fourth(doc: Doc, change: Callable[[dict[str, Any]], None]) -> bytes:
    damaged = copy.deepcopy(doc)
    for event in spans(damaged)[::4]:
        change(event)
    return encode(damaged)


WRONG_TYPES: dict[str, list[object]] = {
    "ts": [[1], {"at": 1}, "soon", True, None],
    "dur": [[1], {"for": 1}, "long", True],
    "args": [[1, 2], "none", 5, True],
    "name": [["aten::mm"], {"op": 1}, True],
    "ph": [5, ["X"], {"ph": "X"}, True],
    "pid": [[0], {"pid": 0}, True],
    "tid": [[1], {"tid": 1}, False],
    "cat": [["cpu_op"], {"cat": 1}],
}


def wrong_type_cases(doc: Doc) -> Iterator[Case]:
    for field, values in WRONG_TYPES.items():
        for value in values:

            def change(event: dict[str, Any], field: str = field, value: object = value) -> None:
                event[field] = value

            label = type(value).__name__
            yield Case(f"{field}-{label}", every_fourth(doc, change), f"wrong type ({field} ")


def absurd_cases(doc: Doc) -> Iterator[Case]:
    impossible = "impossible times"
    for field, value in [
        ("ts", 1e300),
        ("ts", -1e300),
        ("ts", 1e18),
        ("ts", "NaN"),
        ("ts", "-Infinity"),
        ("dur", -5),
        ("dur", 1e300),
        ("dur", "Infinity"),
    ]:

        def change(event: dict[str, Any], field: str = field, value: object = value) -> None:
            event[field] = value

        yield Case(f"{field}-{value}", every_fourth(doc, change), impossible)
    # Unquoted NaN is not JSON: the reader repairs it to null, a missing timestamp.
    damaged = every_fourth(doc, lambda e: e.update(ts="@NaN@"))
    yield Case("ts-bare-NaN", damaged.replace(b'"@NaN@"', b"NaN"), "wrong type (ts ")


def cut_cases(doc: Doc) -> Iterator[Case]:
    whole = encode(doc)
    for share in (0.02, 0.3, 0.5, 0.97):
        yield Case(f"cut-{share}", whole[: int(len(whole) * share)], "truncated")
    yield Case("cut-before-last-brace", whole[:-1], "truncated")
    packed = gzip.compress(whole)
    yield Case("gz-cut", packed[: len(packed) // 2], "truncated", ".json.gz")


def shape_cases(doc: Doc) -> Iterator[Case]:
    events = doc["traceEvents"]
    for times in (2, 3):
        yield Case(f"written-{times}x", encode({**doc, "traceEvents": events * times}), "duplicate")
    mixed = events * 2
    random.Random(7).shuffle(mixed)
    yield Case("doubled-shuffled", encode({**doc, "traceEvents": mixed}), "duplicate")
    shuffled = list(events)
    random.Random(3).shuffle(shuffled)
    yield Case("shuffled", encode({**doc, "traceEvents": shuffled}), None)
    yield Case("bare-array", encode(events), None)
    keys_last = {k: v for k, v in doc.items() if k != "traceEvents"}
    yield Case("keys-after", encode({"traceEvents": events, **keys_last}), None)
    odd_keys = {**doc, "deviceProperties": "none", "distributedInfo": [1]}
    yield Case("odd-header-last", encode({"traceEvents": events, **odd_keys}), None)
    yield Case("odd-header-first", encode(odd_keys), None)
    not_events = [*events[:50], 1, "x", None, [], *events[50:]]
    yield Case("not-events", encode({**doc, "traceEvents": not_events}), "wrong type (event ")


def huge_cases(doc: Doc) -> Iterator[Case]:
    """Strings a hundred pieces long, full of what looks like event boundaries; and one longer
    than the reader's real 2 MB pieces, read in those (its cost grows with the string's length
    over a piece's, squared: a piece is cut only where an event ends)."""
    big = "x{},{" * (PIECE_BYTES * 100 // 5)
    yield Case("huge-name", every_fourth(doc, lambda e: e.update(name=big[:20_000])), None)
    one = copy.deepcopy(doc)
    spans(one)[40]["args"]["note"] = big
    yield Case("huge-arg", encode(one), None)
    yield Case("huge-key", encode({**doc, "comment": big}), None)
    spans(one)[40]["args"]["note"] = "x{},{" * (1 << 20)
    yield Case("huge-arg-5MB", encode(one), None, piece_bytes=decode.BLOCK_BYTES)


def refused_cases(doc: Doc) -> Iterator[Case]:
    """Inputs that are no trace: one line, exit 2."""
    deep = 50_000
    yield Case("nested-array", b"[" * deep + b"]" * deep, "exit 2")
    yield Case("nested-events", b'{"traceEvents":[' + b"[" * deep + b"]" * deep + b"]}", "exit 2")
    nested = every_fourth(doc, lambda e: e["args"].update(deep="@DEEP@"))
    yield Case("nested-arg", nested.replace(b'"@DEEP@"', b"[" * deep + b"]" * deep), "exit 2")
    yield Case("empty", b"", "exit 2")
    yield Case("no-events", encode({**doc, "traceEvents": []}), "exit 2")
    yield Case("only-not-events", encode({"traceEvents": [1, 2, [3]]}), "exit 2")
    yield Case("not-json", b"\x00\x01 not json", "exit 2")
    yield Case("garbage-in-middle", encode(doc).replace(b'"ph": "X"', b'"ph": X!', 1), "exit 2")


def corpus() -> list[Case]:
    doc = sample()
    makers = (
        wrong_type_cases,
        absurd_cases,
        cut_cases,
        shape_cases,
        huge_cases,
        refused_cases,
    )
    return [case for make in makers for case in make(doc)]


CASES = corpus()


class Outcome(NamedTuple):
    status: int
    report: dict[str, Any] | None
    stderr: str


def analyze(path: Path, capsys: pytest.CaptureFixture[str]) -> Outcome:
    """`torchtop analyze PATH --format json`, in this process; any exception fails the test."""
    status = main(["analyze", str(path), "--format", "json"])
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return Outcome(status, json.loads(out) if status == 0 else None, err)


def check(case: Case, outcome: Outcome, path: Path) -> None:
    if case.expect == "exit 2" or outcome.status == 2:
        assert outcome.status == 2, f"{case.name}: analysed, not refused"
        lines = outcome.stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith(f"torchtop: {path}: "), lines
        assert case.expect in ("exit 2", "truncated"), f"{case.name} refused: {lines[0]}"
        if case.expect == "exit 2":
            assert "truncated" not in lines[0]
        return
    assert outcome.status == 0 and outcome.report is not None
    notes = "\n".join(outcome.report["notes"])
    if case.expect != "truncated":
        assert "truncated" not in notes + outcome.stderr, f"{case.name}: {notes}"
        assert not any(t["truncated"] for t in outcome.report["traces"])
    if case.expect is None:
        assert "dropped" not in notes, f"{case.name}: {notes}"
    else:
        assert case.expect in notes, f"{case.name}: {notes}"


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_each_malformed_trace_is_analysed_with_a_note_or_refused_in_one_line(
    case: Case, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(decode, "BLOCK_BYTES", case.piece_bytes)
    monkeypatch.setenv(parallel.WORKERS_ENV, "1")
    path = tmp_path / f"{case.name}{case.suffix}"
    path.write_bytes(case.data)
    check(case, analyze(path, capsys), path)


def cases(*names: str) -> list[Case]:
    chosen = [c for c in CASES if c.name in names]
    assert len(chosen) == len(names)
    return chosen


def run_case(case: Case, folder: Path, capsys: pytest.CaptureFixture[str]) -> Outcome:
    path = folder / f"{case.name}{case.suffix}"
    path.write_bytes(case.data)
    return analyze(path, capsys)


@pytest.mark.parametrize(
    "case",
    cases("ts-str", "args-list", "ts-1e+300", "written-3x", "not-events", "cut-0.5", "nested-arg"),
    ids=lambda c: c.name,
)
def test_two_readers_tell_what_one_tells(
    case: Case, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The worker that reads half of a big file decodes its pieces apart: it must set aside
    and count the same events, and fail the same way."""
    monkeypatch.setattr(decode, "BLOCK_BYTES", PIECE_BYTES)
    monkeypatch.setattr(parallel, "PIECE_BYTES", PIECE_BYTES)
    monkeypatch.setenv(parallel.WORKERS_ENV, "1")
    alone = run_case(case, tmp_path, capsys)
    monkeypatch.setenv(parallel.WORKERS_ENV, "2")
    shared = run_case(case, tmp_path, capsys)
    assert shared.status == alone.status
    assert shared.stderr == alone.stderr
    if alone.report is not None and shared.report is not None:
        assert shared.report["notes"] == alone.report["notes"]
        assert shared.report["traces"] == alone.report["traces"]


def test_the_counts_name_each_cause_exactly(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Operators damaged four ways, then the whole file written twice: each damaged event and
    its copy are set aside for their cause, each sound operator's copy as a duplicate."""
    damaged = sample()
    everything = spans(damaged)
    operators = [e for e in everything if not e["name"].startswith("ProfilerStep#")]
    causes: list[tuple[str, object]] = [("args", [1]), ("ts", "soon"), ("ts", 1e300), ("dur", -1)]
    count = []
    for i, (field, value) in enumerate(causes):
        for event in operators[i::8]:
            event[field] = value
        count.append(len(operators[i::8]))
    path = tmp_path / "mixed.json"
    path.write_bytes(encode({**damaged, "traceEvents": damaged["traceEvents"] * 2}))
    outcome = analyze(path, capsys)
    assert outcome.report is not None
    (trace,) = outcome.report["traces"]
    wrong = {"args": 2 * count[0], "ts": 2 * count[1]}
    impossible = 2 * (count[2] + count[3])
    assert trace["malformed_fields"] == wrong
    assert trace["dropped_malformed"] == sum(wrong.values())
    assert trace["dropped_corrupt"] == impossible
    assert trace["dropped_duplicate"] == len(everything) - sum(count)
    notes = outcome.report["notes"]
    assert (
        f"dropped {sum(wrong.values())} malformed event(s) with a field of the wrong type "
        f"(args {wrong['args']}, ts {wrong['ts']})"
    ) in notes
    assert any(
        n.startswith(f"dropped {impossible} corrupt event(s) at impossible times") for n in notes
    )
    assert any(
        n.startswith(f"dropped {trace['dropped_duplicate']} duplicate event(s)") for n in notes
    )
    assert outcome.report["steps"]["count"] == SAMPLE_STEPS
    # stderr says it too, one line a cause, so no damage goes unseen when the report is a file.
    said = [line for line in outcome.stderr.splitlines() if line.startswith(f"torchtop: {path}:")]
    assert [line.split(": ", 2)[2].split(" event(s)")[0] for line in said] == [
        f"dropped {sum(wrong.values())} malformed",
        f"dropped {impossible} corrupt",
        f"dropped {trace['dropped_duplicate']} duplicate",
    ], outcome.stderr


def report_of(case: Case, folder: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    outcome = run_case(case, folder, capsys)
    assert outcome.report is not None
    return outcome.report


@pytest.mark.parametrize("name", ["written-2x", "written-3x", "doubled-shuffled", "shuffled"])
def test_repeated_or_shuffled_events_read_as_the_profile_itself(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    original = report_of(Case("original", encode(sample()), None), tmp_path, capsys)
    (case,) = cases(name)
    damaged = report_of(case, tmp_path, capsys)
    assert damaged["steps"] == original["steps"]
    assert damaged["steps"]["count"] == SAMPLE_STEPS
    assert damaged["breakdown"] == original["breakdown"]
    assert damaged["bottleneck"] == original["bottleneck"]
    assert damaged["top_ops"] == original["top_ops"]


def test_random_damage_never_raises_nor_calls_a_whole_file_truncated(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Hypothesis draws the damage: any JSON value in any field of a few events, some events
    repeated, the file maybe cut. Runs where hypothesis is installed (it is not a dependency)."""
    hypothesis = pytest.importorskip("hypothesis")
    st = pytest.importorskip("hypothesis.strategies")
    monkeypatch.setattr(decode, "BLOCK_BYTES", PIECE_BYTES)
    monkeypatch.setenv(parallel.WORKERS_ENV, "1")
    doc = sample()
    count = len(doc["traceEvents"])
    values = st.recursive(
        st.none() | st.booleans() | st.floats() | st.integers() | st.text(max_size=20),
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner),
        max_leaves=8,
    )
    fields = st.sampled_from(["ts", "dur", "args", "name", "ph", "pid", "tid", "cat", "id"])
    damage = st.lists(st.tuples(st.integers(0, count - 1), fields, values), max_size=6)

    def check_one(changes: list[tuple[int, str, object]], times: int, cut: float | None) -> None:
        damaged = copy.deepcopy(doc)
        for index, field, value in changes:
            damaged["traceEvents"][index][field] = value
        damaged["traceEvents"] *= times
        data = json.dumps(damaged, allow_nan=True).encode()
        if cut is not None:
            data = data[: int(len(data) * cut)]
        path = tmp_path / "drawn.json"
        path.write_bytes(data)
        outcome = analyze(path, capsys)
        if outcome.status == 2:
            assert outcome.stderr.count("\n") == 1 and outcome.stderr.startswith(
                f"torchtop: {path}: "
            )
            return
        assert outcome.status == 0 and outcome.report is not None
        (trace,) = outcome.report["traces"]
        notes = "\n".join(outcome.report["notes"])
        if cut is None:
            assert not trace["truncated"] and "truncated" not in notes + outcome.stderr
        dropped = [trace[k] for k in ("dropped_malformed", "dropped_corrupt", "dropped_duplicate")]
        assert ("dropped" in notes) == any(dropped)

    drawn = hypothesis.given(damage, st.integers(1, 3), st.none() | st.floats(0.0, 1.0))
    hypothesis.settings(max_examples=20, deadline=None, database=None)(drawn(check_one))()


def test_events_set_aside_lower_the_confidence_as_a_cut_does(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A quarter of the operators at impossible times: the verdict stands on what is left, and
    says it is less sure (the issue's trace read at confidence 1.00)."""
    original = report_of(Case("original", encode(sample()), None), tmp_path, capsys)
    (case,) = cases("ts-1e+300")
    damaged = report_of(case, tmp_path, capsys)
    assert damaged["metrics"]["trace_set_aside_share"] > 0.1
    assert original["metrics"]["trace_set_aside_share"] == 0
    assert damaged["confidence"] <= 0.7 * original["confidence"] + 0.01
