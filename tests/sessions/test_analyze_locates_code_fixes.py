"""`torchtop analyze` names the user's own line for a code fix, from the trace's `python_function`
events (Kineto `with_stack=True`), or says the trace has no Python stacks; the same line
whichever way the file was read (one process, two readers sharing it, a pool of files)."""

from __future__ import annotations

import gzip
import json
import os
import re
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from torchtop.advice.locate import is_user_file, locate, trace_stacks
from torchtop.report import render_text, report_to_json
from torchtop.sessions.offline import NO_STACKS, analyze_paths
from torchtop.traces import decode, read_trace
from torchtop.traces.parallel import WORKERS_ENV

WITH_STACKS = "tracelens/h100/Falconsai_nsfw_image_detection__1016002.json.gz"
SMALL_WITH_STACKS = "tracelens/h100/gaunernst_bert-small-uncased__1016001.json.gz"
SAMPLES = Path(__file__).resolve().parents[2] / "sample_traces"
WITHOUT_STACKS = SAMPLES / "copy_heavy"


def events_of(path: Path) -> list[dict[str, Any]]:
    with gzip.open(path) as file:
        events: list[dict[str, Any]] = json.load(file)["traceEvents"]
    return events


def code_fixes(report: dict[str, Any]) -> list[dict[str, Any]]:
    return [f for finding in report["findings"] for f in finding["fixes"] if f["apply"] == "code"]


def analyzed(paths: list[Path], workers: str, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    monkeypatch.setenv(WORKERS_ENV, workers)
    return report_to_json(analyze_paths([str(p) for p in paths]))


def test_a_code_fix_names_the_user_line_the_traces_python_events_lead_to(
    shared: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = shared / WITH_STACKS
    fixes = code_fixes(analyzed([path], "1", monkeypatch))
    assert fixes, "this trace is advised a code change"
    # The events read with the json module, apart from the trace reader, and their stacks
    # followed through each event's `Python parent id`.
    stacks = trace_stacks(events_of(path))
    assert stacks
    located = [f for f in fixes if not f["where"].startswith("could not")]
    assert located, fixes
    for fix in fixes:
        assert fix["where"] == str(locate(fix["knob"], stacks))
    for fix in located:
        file, line = fix["where"].rsplit(":", 1)
        # The model adapter of the harness that ran the model: neither torch, transformers
        # nor Python's own, on the stacks, and not on this machine, so named without its text.
        assert is_user_file(file) and file.startswith("moca/")
        assert any((file, int(line)) in frames for frames, _ in stacks)


def test_a_trace_without_python_stacks_says_so_for_each_code_fix(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    (path,) = WITHOUT_STACKS.glob("*.json.gz")
    assert not any(e.get("cat") == "python_function" for e in events_of(path))
    fixes = code_fixes(analyzed([path], "1", monkeypatch))
    assert fixes, "this trace is advised a code change"
    assert all(fix["where"] == NO_STACKS for fix in fixes)
    assert "with_stack=True" in NO_STACKS
    other = [
        f
        for finding in analyzed([path], "1", monkeypatch)["findings"]
        for f in finding["fixes"]
        if f["apply"] != "code"
    ]
    assert all("where" not in fix for fix in other)


@pytest.mark.skipif(
    not hasattr(os, "fork") or os.uname().sysname != "Linux", reason="the readers fork on Linux"
)
def test_two_readers_of_one_file_and_a_pool_of_files_locate_the_same_lines(
    shared: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    one = shared / WITH_STACKS
    monkeypatch.setattr(decode, "BLOCK_BYTES", 64 << 10)  # dozens of pieces, half to the worker
    serial = analyzed([one], "1", monkeypatch)
    alone = read_trace(one).python
    shared_read = analyzed([one], "2", monkeypatch)  # a forked reader takes half the file
    halves = read_trace(one).python
    assert alone is not None and halves is not None and len(alone.ident) > 1000
    for calls in (alone, halves):
        assert np.array_equal(calls.ident, alone.ident)
        assert np.array_equal(calls.parent, alone.parent)
        assert np.array_equal(calls.dur_us, alone.dur_us)
        assert [calls.names[c] for c in calls.name] == [alone.names[c] for c in alone.name]
    assert code_fixes(shared_read) == code_fixes(serial)
    assert shared_read == serial
    folder = tmp_path / "job"
    folder.mkdir()
    for name in (WITH_STACKS, SMALL_WITH_STACKS):
        shutil.copy(shared / name, folder / Path(name).name)
    in_turn = analyzed([folder], "1", monkeypatch)
    pooled = analyzed([folder], "2", monkeypatch)  # one worker process per file
    assert any(not f["where"].startswith("could not") for f in code_fixes(pooled))
    assert pooled == in_turn


def test_the_text_report_shows_the_line_under_a_code_fix_and_the_reason_where_none(
    shared: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(WORKERS_ENV, "1")
    located = render_text(analyze_paths([str(shared / WITH_STACKS)]))
    assert "at moca/library/" in located
    (path,) = WITHOUT_STACKS.glob("*.json.gz")
    unlocated = render_text(analyze_paths([str(path)]))
    assert NO_STACKS in unlocated


def test_a_trace_with_no_code_fix_is_reported_without_any_where(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    (path,) = (SAMPLES / "healthy").glob("*.json.gz")
    report = analyzed([path], "1", monkeypatch)
    assert not code_fixes(report)
    assert report["findings"]
    assert all("where" not in f for finding in report["findings"] for f in finding["fixes"])


def test_each_stack_is_the_walk_up_its_leafs_parent_links(shared: Path) -> None:
    # Built-in calls (`<built-in function perf_counter_ns>`) name no file and line: no frame.
    events = [
        e
        for e in events_of(shared / WITH_STACKS)
        if e.get("cat") == "python_function" and re.match(r".+\(\d+\): ", e["name"])
    ]
    by_id = {e["args"]["Python id"]: e for e in events}
    callers = {e["args"].get("Python parent id") for e in events}
    walked = []
    for event in events:
        if event["args"]["Python id"] in callers:
            continue
        frames: list[tuple[str, int]] = []
        node: dict[str, Any] | None = event
        while node is not None and len(frames) < 256:
            file, line = re.findall(r"^(.+)\((\d+)\): ", node["name"])[0]
            frames.append((file, int(line)))
            node = by_id.get(node["args"].get("Python parent id"))
        walked.append((frames, float(event["dur"])))
    assert len(walked) > 100
    assert trace_stacks(events) == walked
