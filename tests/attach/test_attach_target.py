"""What attach says of the job it found, and each rank's standing from the records alone: the
run folder written with the real writers, read with the real reader, assessed as attach does."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.conftest import CONTEXT
from torchtop.assess.attached_ranks import assess_attached_ranks
from torchtop.collectors.tree import launcher_name
from torchtop.diagnosis.rules import load_rules
from torchtop.model.attach import AttachedRank, AttachTarget
from torchtop.model.report import RankStanding
from torchtop.report import render_text, report_to_json
from torchtop.runs.journal import JournalWriter, write_record
from torchtop.runs.layout import RunLayout
from torchtop.runs.records import (
    RunRecord,
    SamplerPace,
    StackFrame,
    StackProcess,
    StacksSample,
    StackThread,
)
from torchtop.runs.state import load_run

START_T = 1_700_000_000.0
LOADER = "/usr/lib/python3.11/site-packages/torch/utils/data/dataloader.py"


def two_ranks(world_size: int | None = 2, numbered_by: str = "environment") -> AttachTarget:
    return AttachTarget(
        pid=11,
        role="launcher",
        root_pid=11,
        launcher="torchrun",
        ranks=(
            AttachedRank(pid=12, rank=0, local_rank=0, world_size=world_size),
            AttachedRank(pid=13, rank=1, local_rank=1, world_size=world_size),
        ),
        numbered_by=numbered_by,
    )


def test_one_nodes_part_of_a_bigger_job_is_named_as_its_ranks_of_the_world() -> None:
    assert two_ranks(world_size=2).job_words == "torchrun PID 11, 2 ranks"
    assert two_ranks(world_size=8).job_words == "torchrun PID 11, 2 of 8 ranks"


def test_ranks_numbered_by_start_order_are_said_to_be() -> None:
    line = two_ranks(numbered_by="start order").announcement()
    assert "(numbered by start order: no RANK in an environment, or one unreadable)" in line
    assert "numbered by" not in two_ranks().announcement()


def recorded(root: Path) -> RunLayout:
    """An attach to torchrun recorded as `attach` records it: rank 1's samples stop after 8 s
    while rank 0's go on (no host samples: the stack samples alone tell)."""
    layout = RunLayout(root)
    layout.create()
    launch = RunRecord(kind="attach", command=["torchrun"], pid=11, attached=two_ranks())
    write_record(layout.run_json, launch)
    writer = JournalWriter(layout.samples("stacks"))
    for second in range(20):
        pids = (12, 13) if second < 8 else (12,)
        processes = [StackProcess(pid=pid, role="main", threads=[waiting(pid)]) for pid in pids]
        writer.write(StacksSample(t=START_T + second, processes=processes))
    writer.close()
    return layout


def test_a_rank_whose_samples_stop_while_its_peer_goes_on_is_silent_since_its_last(
    tmp_path: Path,
) -> None:
    layout = recorded(tmp_path / "run")
    report = assess_attached_ranks(load_run(layout.root), {}, load_rules(), context=CONTEXT)
    document = report_to_json(report)
    ranks = {entry["rank"]: entry for entry in document["ranks"]}
    assert ranks[0]["ended"] is None
    assert ranks[1]["ended"] == "silent since 2023-11-14T22:13:27+00:00"  # START_T + 7 s
    assert [ranks[n]["steps"]["stack_samples"] for n in (0, 1)] == [20, 8]
    assert "ended: silent since 2023-11-14T22:13:27+00:00" in render_text(report)
    assert document["bottleneck"] == "dataloader"


def chunked(root: Path, rank_1_chunks: int) -> RunLayout:
    """An attach recorded with native chunks, as `collectors.profiles` writes them: each rank's
    chunks of 4, 4, 8, 16 and 16 s on its own clock (rank 1's start 3 s late: py-spy loading the
    symbols on a loaded machine), a record per finished chunk; rank 1's first few only."""
    layout = RunLayout(root)
    layout.create()
    launch = RunRecord(kind="attach", command=["torchrun"], pid=11, attached=two_ranks())
    write_record(layout.run_json, launch)
    ends: list[tuple[float, int, int]] = []
    for pid, start in ((12, 0.0), (13, 3.0)):
        t = start
        for number, chunk_s in enumerate((4, 4, 8, 16, 16)):
            t += chunk_s
            if pid == 13 and number >= rank_1_chunks:
                break
            ends.append((t, pid, chunk_s))
    writer = JournalWriter(layout.samples("stacks"))
    for t, pid, chunk_s in sorted(ends):
        pace = SamplerPace(chunk_s=chunk_s, rate_per_s=4, cpu_s=1.0, budget_share=0.01)
        process = StackProcess(pid=pid, role="main", threads=[waiting(pid)], sampler=pace)
        writer.write(StacksSample(t=START_T + t, processes=[process], native=True))
    writer.close()
    return layout


def test_ranks_whose_chunks_end_on_their_own_clocks_both_run_until_one_is_overdue(
    tmp_path: Path,
) -> None:
    """Rank 0's last chunk ended at 48 s; rank 1's ended at 35 s and its next ends at 51 s: a
    gap past `silent_after_s` (5 s) that is only the chunk's length, not a silent rank."""
    layout = chunked(tmp_path / "a", rank_1_chunks=4)
    running = assess_attached_ranks(load_run(layout.root), {}, load_rules(), context=CONTEXT)
    assert [rank.standing for rank in running.ranks] == [RankStanding(), RankStanding()]
    layout = chunked(tmp_path / "b", rank_1_chunks=3)  # its 16 s chunks never come
    stopped = assess_attached_ranks(load_run(layout.root), {}, load_rules(), context=CONTEXT)
    assert stopped.ranks[0].standing == RankStanding()
    silent = RankStanding(ended="silent since 2023-11-14T22:13:39+00:00")  # + 19 s
    assert stopped.ranks[1].standing == silent


def waiting(pid: int) -> StackThread:
    """A main thread inside the DataLoader's `__next__`."""
    frames = [StackFrame(function="__next__", file=LOADER, line=630)]
    return StackThread(tid=pid, name="MainThread", active=False, frames=frames)


def test_analyze_reads_a_recorded_attach_back_with_its_ranks(tmp_path: Path) -> None:
    layout = recorded(tmp_path / "run")
    result = subprocess.run(
        [sys.executable, "-m", "torchtop", "analyze", str(layout.root), "--format", "json"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert document["source"]["kind"] == "attach"
    assert document["source"]["attached"]["job"] == "torchrun PID 11, 2 ranks"
    assert [(r["rank"], r["pid"]) for r in document["ranks"]] == [(0, 12), (1, 13)]


def test_a_launcher_is_named_as_the_user_started_it() -> None:
    venv = "/venv/bin"
    assert launcher_name((f"{venv}/python", f"{venv}/torchrun", "--nproc-per-node", "2")) == (
        "torchrun"
    )
    assert launcher_name(("python", "-m", "torch.distributed.run", "train.py")) == (
        "torch.distributed.run"
    )
    assert launcher_name(("python", "-m", "torch.distributed.launch", "train.py")) == (
        "torch.distributed.launch"
    )
