"""`--tensorboard` on jobs of several ranks: a TensorBoard run per rank, and every rank's
profiler windows listed by torch-tb-profiler's own loader as the workers of one run."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.assess.test_nodes import node
from tests.conftest import WORKLOADS
from tests.exporters.test_tensorboard import read
from tests.exporters.test_tensorboard_run import profiler_runs
from torchtop.diagnosis.rules import load_rules
from torchtop.exporters.tensorboard import TensorBoardLog
from torchtop.jobs.job import Output, start
from torchtop.jobs.records import write_exit_record
from torchtop.live.watch import LiveMonitor

JOBS = WORKLOADS
WINDOW_EARLY = {"TORCHTOP_WINDOW_FIRST_STEP": "3", "TORCHTOP_WINDOW_STEPS": "4"}


@pytest.mark.slow
def test_a_two_rank_torchrun_job_has_a_run_per_rank_and_both_workers_windows(
    tmp_path: Path,
) -> None:
    run_dir = tmp_path / "run"
    command = [
        *(sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2"),
        str(JOBS / "ddp_comm.py"),
    ]
    env = {**os.environ, **WINDOW_EARLY}
    job = start(command, run_dir, "run", env=env, output=Output.log(tmp_path / "job.log"))
    log = TensorBoardLog(run_dir / "tensorboard", run_dir)
    monitor = LiveMonitor(run_dir, load_rules(None), job=job, on_tick=log.publish)
    try:
        deadline = time.monotonic() + 240  # a hung job fails here, not the suite
        while not monitor.tick().finished and time.monotonic() < deadline:
            time.sleep(0.5)
        snapshot = monitor.tick()  # everything the ranks wrote before they exited
    finally:
        monitor.finish()
        log.close()
    assert job.poll() == 0, (tmp_path / "job.log").read_text()[-2000:]
    board = run_dir / "tensorboard"
    for rank in snapshot.report.ranks:
        figures = rank.analysis.metrics
        events = read(board / f"rank{rank.analysis.rank}")
        process = next(p for p in snapshot.state.training_processes if p.rank == rank.analysis.rank)
        walls = [e.value for e in events.Scalars("step/wall_ms")]
        assert walls == [pytest.approx(s.wall_s * 1000, rel=1e-6) for s in process.steps]
        rate = events.Scalars("steps_per_s")[-1].value
        assert rate == pytest.approx(figures["steps_per_s"], rel=1e-6)
    workers = {worker for worker, _span in profiler_runs(board / "profiler")}
    windows = {p.name.split(".")[0] for p in (run_dir / "traces").glob("*.pt.trace.json.gz")}
    # Both ranks' workers, and the plugin's distributed view of them, which it calls "All".
    assert len(windows) == 2 and workers == {*windows, "All"}


def test_watch_writes_a_run_per_rank_of_every_node_where_told_and_nothing_into_the_folder(
    tmp_path: Path,
) -> None:
    run = tmp_path / "run"
    for name, ranks in (("a", (0, 1)), ("b", (2, 3))):
        write_exit_record(node(run, name, ranks, cpu_pct=50.0).layout, "exited", 0)
    before = sorted(run.rglob("*"))
    board = tmp_path / "tb"
    result = subprocess.run(
        [sys.executable, "-m", "torchtop", "watch", str(run), "--headless", "--for", "60",
         "--tensorboard", str(board)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert f"torchtop: TensorBoard event files in {board}" in result.stderr
    assert sorted(run.rglob("*")) == before
    assert sorted(p.name for p in board.iterdir()) == ["job", "rank0", "rank1", "rank2", "rank3"]
    for rank in range(4):
        assert read(board / f"rank{rank}").Scalars("step/wall_ms")
