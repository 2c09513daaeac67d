"""Sampler: journals what its collector returns on a drift-free schedule, and stops promptly."""

from __future__ import annotations

import itertools
import os
import threading
import time
from pathlib import Path
from typing import Any

from tests.tables import tables
from torchtop.collectors.host import HostCollector
from torchtop.collectors.sampler import Sampler
from torchtop.runs.journal import JournalReader, JournalWriter


def records(path: Path) -> list[dict[str, Any]]:
    return tables(JournalReader(path).read_new(final=True))


def wait_for(condition: Any, timeout_s: float = 5.0) -> None:
    deadline_s = time.monotonic() + timeout_s
    while not condition() and time.monotonic() < deadline_s:
        time.sleep(0.01)


def test_the_sampler_writes_each_record_and_stops_within_a_second(tmp_path: Path) -> None:
    path = tmp_path / "samples" / "host.jsonl"
    counter = itertools.count()
    with JournalWriter(path) as writer:
        sampler = Sampler("host", 0.02, lambda: {"kind": "host", "t": float(next(counter))}, writer)
        sampler.start()
        wait_for(lambda: sampler.records_written >= 5)
        began_s = time.monotonic()
        sampler.stop()
        assert time.monotonic() - began_s < 1.0
        assert not sampler.running
    written = records(path)
    assert len(written) == sampler.records_written >= 5
    assert [r["t"] for r in written] == [float(n) for n in range(len(written))]


def test_stop_does_not_wait_out_a_long_interval(tmp_path: Path) -> None:
    with JournalWriter(tmp_path / "s.jsonl") as writer:
        sampler = Sampler("slow", 3600.0, lambda: {"kind": "host", "t": 0.0}, writer).start()
        wait_for(lambda: sampler.records_written == 1)
        began_s = time.monotonic()
        sampler.stop()
        assert time.monotonic() - began_s < 1.0


def test_nothing_is_written_when_the_collector_has_nothing_to_say(tmp_path: Path) -> None:
    calls = threading.Semaphore(0)

    def nothing() -> None:
        calls.release()

    with JournalWriter(tmp_path / "s.jsonl") as writer:
        sampler = Sampler("quiet", 0.01, nothing, writer).start()
        assert all(calls.acquire(timeout=5) for _ in range(3))
        sampler.stop()
    assert records(tmp_path / "s.jsonl") == []


def test_a_failing_collector_is_reported_once_as_a_note_and_keeps_being_called(
    tmp_path: Path,
) -> None:
    calls = itertools.count(1)

    def flaky() -> dict[str, Any]:
        n = next(calls)
        if n <= 3:
            raise RuntimeError(f"broken {n}")
        return {"kind": "host", "t": float(n)}

    with JournalWriter(tmp_path / "s.jsonl") as writer:
        sampler = Sampler("host", 0.01, flaky, writer).start()
        wait_for(lambda: sampler.records_written >= 3)
        sampler.stop()
    written = records(tmp_path / "s.jsonl")
    assert written[0]["kind"] == "note"
    assert written[0]["message"] == "host sampler failed: RuntimeError: broken 1"
    assert {r["kind"] for r in written[1:]} == {"host"}


def test_an_unavailable_record_is_the_last_the_sampler_writes(tmp_path: Path) -> None:
    def unavailable() -> dict[str, Any]:
        return {"kind": "unavailable", "t": 1.0, "reason": "no NVIDIA GPU found"}

    with JournalWriter(tmp_path / "gpu.jsonl") as writer:
        sampler = Sampler("gpu", 0.01, unavailable, writer).start()
        wait_for(lambda: not sampler.running)
        assert not sampler.running
    assert records(tmp_path / "gpu.jsonl") == [unavailable()]


def test_a_record_that_breaks_the_schema_is_reported_once_as_a_collector_bug(
    tmp_path: Path,
) -> None:
    with JournalWriter(tmp_path / "s.jsonl") as writer:
        sampler = Sampler("host", 0.01, lambda: {"kind": "host", "t": 1.0, "cpu": 5}, writer)
        sampler.start()
        wait_for(lambda: sampler.records_written >= 1)
        sampler.stop()
    (note,) = records(tmp_path / "s.jsonl")
    assert note["kind"] == "note"
    assert note["message"].startswith("host sampler failed: ValidationError: ")
    assert "unknown field `cpu`" in note["message"]


def test_a_slow_sample_does_not_push_the_schedule_back(tmp_path: Path) -> None:
    started: list[float] = []

    def slow() -> None:
        started.append(time.monotonic())
        time.sleep(0.03)

    with JournalWriter(tmp_path / "s.jsonl") as writer:
        sampler = Sampler("slow", 0.05, slow, writer).start()
        wait_for(lambda: len(started) >= 11)
        sampler.stop()
    # due at start + k * 0.05 s: ten intervals take about 0.5 s, not 10 * (0.05 + 0.03) s
    assert started[10] - started[0] < 0.7


def test_ticks_missed_by_an_overrun_are_skipped_not_bunched() -> None:
    now = [100.0]
    sampler = Sampler("x", 1.0, lambda: None, None, clock=lambda: now[0])  # type: ignore[arg-type]
    assert sampler._next_due(100.0) == 101.0
    now[0] = 103.5  # the sample due at 101 took until 103.5
    assert sampler._next_due(101.0) == 104.0


def test_a_host_sampler_journals_host_records_of_this_process(tmp_path: Path) -> None:
    path = tmp_path / "samples" / "host.jsonl"
    with JournalWriter(path) as writer:
        sampler = Sampler("host", 0.05, HostCollector(os.getpid()).sample, writer).start()
        wait_for(lambda: sampler.records_written >= 3)
        sampler.stop()
    written = records(path)
    assert len(written) >= 3 and {r["kind"] for r in written} == {"host"}
    assert written[0]["cpu_pct"] is None and written[-1]["cpu_pct"] is not None
    assert written[-1]["processes"][0]["role"] == "main"  # the root comes first
