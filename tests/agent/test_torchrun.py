"""`torchrun`'s workers inherit the agent: one event file and one trace per rank."""

from __future__ import annotations

from pathlib import Path

from tests.agent.running import JOBS, run_job
from tests.tables import tables
from torchtop.runs.journal import JournalReader
from torchtop.sessions.offline import analyze_paths


def test_each_torchrun_worker_reports_its_rank_steps_and_its_own_window(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    command = ["-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2"]
    job = run_job(
        run_dir,
        [*command, str(JOBS / "ddp.py")],
        extra_env={"TORCHTOP_WINDOW_FIRST_STEP": "3", "TORCHTOP_WINDOW_STEPS": "3"},
    )
    assert job.returncode == 0, job.stderr
    assert job.stdout.count("worker done") == 2

    by_rank = {}
    for path in job.event_files():
        records = tables(JournalReader(path).read_new(final=True))
        by_rank[records[0]["rank"]] = records
    assert sorted(by_rank, key=str) == [0, 1, None]  # None: torchrun's own process
    assert not [r for r in by_rank[None] if r["kind"] == "step"]
    for rank in (0, 1):
        hello = by_rank[rank][0]
        assert (hello["local_rank"], hello["world_size"]) == (rank, 2)
        assert len([r for r in by_rank[rank] if r["kind"] == "step"]) == 10
        (window,) = [r for r in by_rank[rank] if r["kind"] == "window"]
        assert Path(window["path"]).name.startswith(f"rank{rank}.")

    report = analyze_paths([str(run_dir / "traces")])
    assert len(report.ranks) == 2
    assert all(len(r.analysis.steps) == 3 for r in report.ranks)
