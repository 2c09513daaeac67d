"""`torchtop watch RUN_DIR --headless`: a run another process launched, followed read-only."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from tests.assess.test_nodes import node
from torchtop.jobs.records import write_exit_record

TORCHTOP = [sys.executable, "-m", "torchtop"]


def watch(args: list[str], timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*TORCHTOP, "watch", *args], capture_output=True, text=True, timeout=timeout
    )


def files_of(root: Path) -> dict[Path, bytes]:
    return {p: p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_streams_and_run_folders_mixed_are_one_line_naming_the_folder(tmp_path: Path) -> None:
    result = watch(["http://127.0.0.1:9999", str(tmp_path), "--headless"])
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        f"torchtop: {tmp_path}: watch follows either run folders or streams, not both"
    ]


def test_a_missing_run_folder_is_one_line_naming_it(tmp_path: Path) -> None:
    result = watch([str(tmp_path / "nowhere"), "--headless"])
    assert result.returncode == 2
    assert result.stderr.strip() == (
        f"torchtop: {tmp_path / 'nowhere'}: no such run folder "
        "(`torchtop run --run-dir DIR -- python train.py` records one)"
    )


def test_watch_reports_every_rank_of_every_node_and_writes_nothing_into_the_folder(
    tmp_path: Path,
) -> None:
    run = tmp_path / "run"
    for name, ranks in (("a", (0, 1)), ("b", (2, 3))):
        write_exit_record(node(run, name, ranks, cpu_pct=50.0).layout, "exited", 0)
    before = files_of(run)
    report_file = tmp_path / "report.json"
    result = watch([str(run), "--headless", "--for", "60", "--report", str(report_file)])
    assert result.returncode == 0, result.stderr
    report = json.loads(report_file.read_text())
    assert [(r["rank"], r["node"]) for r in report["ranks"]] == [
        (0, "a"), (1, "a"), (2, "b"), (3, "b"),
    ]  # fmt: skip
    assert [n["name"] for n in report["nodes"]] == ["a", "b"]
    assert "4 ranks" in result.stderr
    assert files_of(run) == before


def test_watch_ends_when_the_last_node_records_its_end(tmp_path: Path) -> None:
    run = tmp_path / "run"
    a = node(run, "a", (0, 1), cpu_pct=50.0)
    b = node(run, "b", (2, 3), cpu_pct=50.0)
    write_exit_record(a.layout, "exited", 0)
    process = subprocess.Popen(
        [*TORCHTOP, "watch", str(run), "--headless", "--for", "600"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        time.sleep(3)
        assert process.poll() is None  # node b still runs: watch goes on
        write_exit_record(b.layout, "crashed", 1)
        out, err = process.communicate(timeout=60)
    finally:
        process.kill()
    assert process.returncode == 0, err
    assert "rank" in out
