"""A run folder several launchers share, written record by record under nodes/a and nodes/b,
read as one run: every rank of every node, each with its node, and each node's counters."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import pytest

from tests.fake_run import FakeRun
from torchtop.jobs.records import write_exit_record
from torchtop.report import report_to_json
from torchtop.runs.journal import JournalWriter
from torchtop.runs.nodes import PID_LIMIT, SharedRunWatcher
from torchtop.runs.records import HostProcess, HostSample
from torchtop.sessions.offline import analyze_paths

if TYPE_CHECKING:
    from torchtop.sessions.watched import WatchedJob


def node(root: Path, name: str, ranks: tuple[int, int], cpu_pct: float) -> FakeRun:
    """A node's launcher: two ranks with the same pids as the other node's (as in containers)."""
    run = FakeRun(root / "nodes" / name)
    for pid, rank in zip((100, 101), ranks, strict=True):
        run.hello(pid, rank=rank)
        run.steps(pid, count=12, wall_s=0.1, data_wait_s=0.0)
    with JournalWriter(run.layout.samples("host")) as host:
        for t in range(3):
            host.write(HostSample(t=run.t + t, cpu_pct=cpu_pct, mem_used_bytes=1000 + t))
    return run


def analyzed(root: Path) -> dict[str, Any]:
    return report_to_json(analyze_paths([str(root)]))


def test_analyze_reports_every_rank_of_every_node_with_its_node(tmp_path: Path) -> None:
    node(tmp_path, "a", (0, 1), cpu_pct=20.0)
    node(tmp_path, "b", (2, 3), cpu_pct=80.0)
    report = analyzed(tmp_path)
    assert [(r["rank"], r["node"]) for r in report["ranks"]] == [
        (0, "a"), (1, "a"), (2, "b"), (3, "b"),
    ]  # fmt: skip
    assert [(n["name"], n["ranks"]) for n in report["nodes"]] == [("a", [0, 1]), ("b", [2, 3])]
    assert [n["cpu_mean_pct"] for n in report["nodes"]] == [20.0, 80.0]
    assert [n["mem_used_bytes"] for n in report["nodes"]] == [1002, 1002]
    assert report["steps"]["count"] == 10  # what every rank timed after the warm-up
    json.dumps(report)


def test_a_node_that_starts_later_joins_the_run_on_the_next_poll(tmp_path: Path) -> None:
    node(tmp_path, "a", (0, 1), cpu_pct=20.0)
    watcher = SharedRunWatcher(tmp_path)
    assert sorted(p.rank or 0 for p in watcher.poll().training_processes) == [0, 1]
    node(tmp_path, "b", (2, 3), cpu_pct=80.0)
    processes = watcher.poll().training_processes
    assert [(p.rank, p.node) for p in processes] == [(0, "a"), (1, "a"), (2, "b"), (3, "b")]
    # The second node's pids are the first's: each gets a key of its own, kept across polls.
    keys = [p.pid for p in processes]
    assert keys[:2] == [100, 101] and all(k >= PID_LIMIT for k in keys[2:])
    assert [p.pid for p in watcher.poll().training_processes] == keys


def test_the_run_ends_when_every_node_recorded_its_end(tmp_path: Path) -> None:
    a = node(tmp_path, "a", (0, 1), cpu_pct=20.0)
    b = node(tmp_path, "b", (2, 3), cpu_pct=80.0)
    watcher = SharedRunWatcher(tmp_path)
    write_exit_record(a.layout, "exited", 0)
    assert watcher.poll().exit is None
    write_exit_record(b.layout, "crashed", 1)
    state = watcher.poll()
    assert state.exit is not None and state.exit.how == "crashed"
    report = analyzed(tmp_path)
    assert [n["ended"] for n in report["nodes"]] == ["exited", "crashed"]


def test_a_single_launchers_report_gains_no_node_fields(fake_run: FakeRun) -> None:
    for pid, rank in ((100, 0), (101, 1)):
        fake_run.hello(pid, rank=rank)
        fake_run.steps(pid, count=12, wall_s=0.1, data_wait_s=0.0)
    report = analyzed(fake_run.layout.root)
    assert "nodes" not in report
    assert len(report["ranks"]) == 2 and not [r for r in report["ranks"] if "node" in r]


def test_a_launcher_that_is_one_node_of_a_job_does_not_offer_to_relaunch_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # The applier is what the dashboard's `a` key stops and relaunches: one node's part must not.
    from torchtop.runs.identity import NodeIdentity
    from torchtop.sessions.watching import applier

    watched = cast("WatchedJob", object())
    assert applier(watched, None) is watched
    assert applier(watched, NodeIdentity("a")) is None
    said = capsys.readouterr().err
    assert "node a is one part of a job on several nodes" in said
    assert "relaunch every node" in said


def test_a_rank_is_looked_for_in_its_own_nodes_host_samples(tmp_path: Path) -> None:
    # Node b's process 100 is gone from b's newest host sample; node a's process 100 (the same
    # pid, as in containers) is still listed in a's. Only b's rank 2 has ended, which only b's
    # samples, searched for the pid b's agent gave, can tell.
    for name, ranks, gone in (("a", (0, 1), False), ("b", (2, 3), True)):
        run = FakeRun(tmp_path / "nodes" / name)
        for pid, rank in zip((100, 101), ranks, strict=True):
            run.hello(pid, rank=rank)
            run.steps(pid, count=12, wall_s=0.1, data_wait_s=0.0)
        listed = [HostProcess(pid=100), HostProcess(pid=101)]
        with JournalWriter(run.layout.samples("host")) as host:
            host.write(HostSample(t=run.t - 0.5, processes=listed))
            host.write(HostSample(t=run.t + 1.0, processes=listed[1:] if gone else listed))
    ended = {r["rank"]: r["ended"] for r in analyzed(tmp_path)["ranks"]}
    assert ended[2] is not None and ended[2].startswith("silent since")
    assert ended[0] is None and ended[1] is None and ended[3] is None


def test_the_dashboards_rank_lines_name_each_ranks_node(tmp_path: Path) -> None:
    from torchtop.tui.widgets.ranks import rank_line

    node(tmp_path, "a", (0, 1), cpu_pct=20.0)
    node(tmp_path, "b", (2, 3), cpu_pct=80.0)
    report = analyze_paths([str(tmp_path)])
    lines = [rank_line(r, None, 60).plain for r in report.ranks]
    assert all(f"on {name}" in line for line, name in zip(lines, "aabb", strict=True))
