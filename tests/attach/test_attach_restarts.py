"""`torchtop attach` on a `torchrun --max-restarts 1` job whose rank 1 kills itself once:
torchrun starts both ranks again under new pids, and attach follows them. The outside truth is
what each rank prints of itself as it starts (its RANK, pid, attempt and start time)."""

from __future__ import annotations

import json
import os
import queue
import re
import subprocess
import sys
import tempfile
import threading
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import psutil
import pytest
from prometheus_client.samples import Sample

from tests.attach.test_attach_ranks import end_all
from tests.conftest import WORKLOADS
from tests.exporters.scrape import scrape
from tests.exporters.test_metrics_demo import _url
from tests.live.two_nodes import free_port
from torchtop.assess.attached_ranks import followed_ranks
from torchtop.model.attach import AttachedRank
from torchtop.runs.journal import JournalReader
from torchtop.runs.records import RanksSeen, StacksSample

TORCHTOP = [sys.executable, "-m", "torchtop"]
JOB = WORKLOADS / "ddp_restarts.py"
TOLD = re.compile(
    r"rank (?P<rank>\d+) pid (?P<pid>\d+) attempt (?P<attempt>\d+) started (?P<started>[\d.]+)"
)
SAID = re.compile(r"rank (?P<rank>\d+) pid (?P<pid>\d+)")
SHOWN_WITHIN_S = 10.0


class Told:
    """What the job's ranks print of themselves as they start, read from its stdout."""

    def __init__(self, process: subprocess.Popen[str], pattern: re.Pattern[str]) -> None:
        self.pattern = pattern
        self.lines: queue.Queue[str] = queue.Queue()
        self.seen: list[dict[str, str]] = []
        threading.Thread(target=self._pump, args=(process,), daemon=True).start()

    def _pump(self, process: subprocess.Popen[str]) -> None:
        assert process.stdout is not None
        for line in process.stdout:
            self.lines.put(line)

    def ranks(self, count: int, timeout_s: float = 120.0, **wanted: str) -> dict[int, Any]:
        """`count` ranks whose lines match `wanted`: rank -> what its line said."""
        deadline = time.monotonic() + timeout_s
        while True:
            found = {
                int(told["rank"]): told
                for told in self.seen
                if all(told[key] == value for key, value in wanted.items())
            }
            if len(found) >= count:
                return found
            try:
                line = self.lines.get(timeout=max(0.1, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError(f"{count} ranks ({wanted}) never told who they are") from None
            self.seen += [m.groupdict() for m in self.pattern.finditer(line)]


def _pid_started(told: dict[int, Any]) -> dict[int, tuple[int, float]]:
    """rank -> (pid, the Unix time it says it started)."""
    return {rank: (int(said["pid"]), float(said["started"])) for rank, said in told.items()}


def _records(path: Path) -> list[Any]:
    return list(JournalReader(path).read_new(final=True))


def _sampling(run_dir: Path, pids: set[int], timeout_s: float = 60.0) -> None:
    """Until attach has written native samples of each of `pids`."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        path = run_dir / "samples" / "stacks.jsonl"
        stacks = [r for r in _records(path) if isinstance(r, StacksSample)] if path.exists() else []
        if pids <= {p.pid for r in stacks for p in r.processes if p.threads}:
            return
        time.sleep(0.5)
    raise AssertionError(f"attach never sampled {pids}")


def _mid_chunk(run_dir: Path, pid: int, into_s: float = 2.0, timeout_s: float = 60.0) -> None:
    """Until `pid`'s next native chunk has run `into_s` (a chunk is read, and the next begun,
    when a record is written; none is shorter than 4 s): a rank killed then dies mid-chunk,
    with samples in it. Killed just as a chunk began, its py-spy would still be loading
    symbols and have none to keep (which once failed this test)."""
    path = run_dir / "samples" / "stacks.jsonl"

    def records_of_pid() -> int:
        stacks = [r for r in _records(path) if isinstance(r, StacksSample)]
        return sum(1 for r in stacks for p in r.processes if p.pid == pid and p.threads)

    seen, deadline = records_of_pid(), time.monotonic() + timeout_s
    while records_of_pid() == seen:
        assert time.monotonic() < deadline, f"no new chunk of {pid} within {timeout_s:g} s"
        time.sleep(0.1)
    time.sleep(into_s)


@pytest.fixture(scope="module")
def restarted(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The job, attach on its launcher for 60 s (`--headless --format json --metrics`), rank 1
    killed once attach samples both ranks: what the job told, the report, attach's stderr, and
    its metrics scraped before the kill and after the restart."""
    folder = tmp_path_factory.mktemp("restarts")
    kill_file, run_dir = folder / "kill", folder / "run"
    command = [
        sys.executable, "-m", "torch.distributed.run", "--max-restarts", "1",
        "--nproc-per-node", "2", "--master-port", str(free_port()), str(JOB),
    ]  # fmt: skip
    # The ranks train apart (DDP=0): on this loaded machine a restarted attempt's gloo
    # rendezvous failed now and then (`connectFullMesh ... Connection refused`), ending the job,
    # which is torchrun's and not what is tested; torchrun restarts every rank all the same.
    env = {**os.environ, "KILL_FILE": str(kill_file), "DDP": "0"}
    with tempfile.TemporaryFile("w+") as errors:
        job = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=errors, text=True,
                               start_new_session=True, env=env)  # fmt: skip
        try:
            told = Told(job, TOLD)
            first = _pid_started(told.ranks(2, attempt="0"))
            options = ["--headless", "--for", "60", "--format", "json", "--run-dir", str(run_dir)]
            attach = subprocess.Popen(
                [*TORCHTOP, "attach", str(job.pid), *options, "--metrics", "127.0.0.1:0"],
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            )  # fmt: skip
            lines: list[str] = []
            url, reading = _url(attach, lines)
            _sampling(run_dir, {pid for pid, _ in first.values()})
            before = _scraped(url, {pid for pid, _ in first.values()})
            _mid_chunk(run_dir, first[1][0])
            killed_t = time.time()
            kill_file.touch()
            second = _pid_started(told.ranks(2, attempt="1"))
            after = _scraped(url, {pid for pid, _ in second.values()})
            attach.wait(timeout=180)
            assert attach.stdout is not None
            stdout = attach.stdout.read()
            job_running = job.poll() is None
        finally:
            end_all(job)
    reading.join(timeout=10)  # the last of stderr, read by `_url`'s thread
    stderr = "".join(lines)
    assert attach.returncode == 0, stderr
    return {
        "first": first, "second": second, "killed_t": killed_t, "run_dir": run_dir,
        "report": json.loads(stdout), "stderr": stderr, "job_running": job_running,
        "scraped": (before, after),
    }  # fmt: skip


def _scraped(url: str, pids: set[int], timeout_s: float = 30.0) -> list[Sample]:
    """The endpoint's samples once its rank info names `pids` and every rank has a breakdown."""
    deadline = time.monotonic() + timeout_s
    while True:
        samples = scrape(url)
        told = {s.labels["pid"] for s in samples if s.name == "torchtop_rank_info"}
        ranks = {s.labels["rank"] for s in samples if s.name == "torchtop_breakdown_ratio"}
        if told == {str(pid) for pid in pids} and len(ranks) == len(pids):
            return samples
        if time.monotonic() > deadline:
            raise AssertionError(f"the metrics never named {pids}: {told}, {ranks}")
        time.sleep(1.0)


def test_the_restarted_ranks_are_shown_under_their_new_pids_within_10_s_of_their_start(
    restarted: dict[str, Any],
) -> None:
    first, second = restarted["first"], restarted["second"]
    report = restarted["report"]
    assert [(r["rank"], r["pid"]) for r in report["ranks"]] == [
        (0, second[0][0]),
        (1, second[1][0]),
    ]
    assert {r["rank"]: r["pid"] for r in report["source"]["attached"]["ranks"]} == {
        rank: pid for rank, (pid, _) in second.items()
    }
    changes = _records(restarted["run_dir"] / "samples" / "ranks.jsonl")
    assert all(isinstance(r, RanksSeen) for r in changes)
    for rank, (pid, started) in second.items():
        shown_t = min(r.t for r in changes if any(x.pid == pid for x in r.ranks))
        assert shown_t - started <= SHOWN_WITHIN_S, (rank, shown_t - started)
        old = first[rank][0]
        assert f"rank {rank} restarted · PID {pid} (was {old})" in restarted["stderr"]
    assert restarted["job_running"], "attach must never stop the job it watches"


def test_each_restarted_rank_keeps_its_old_pids_figures_and_is_running_under_the_new_one(
    restarted: dict[str, Any],
) -> None:
    first, second, report = restarted["first"], restarted["second"], restarted["report"]
    for row in report["ranks"]:
        (restart,) = row["restarts"]
        assert restart["pid"] == first[row["rank"]][0]
        assert restart["stack_samples"] >= 5, restart
        # The old pid is replaced once the new one was seen: after it started.
        until_t = datetime.fromisoformat(restart["until"]).timestamp()
        assert until_t >= second[row["rank"]][1] - 1.0
        assert row["ended"] is None, row
        assert row["steps"]["stack_samples"] > 0
    stacks = [
        r
        for r in _records(restarted["run_dir"] / "samples" / "stacks.jsonl")
        if isinstance(r, StacksSample)
    ]
    sampled = {p.pid for r in stacks for p in r.processes if p.threads}
    assert {pid for pid, _ in second.values()} <= sampled, "the new pids are sampled"
    # Rank 1's last chunk, ended by its own death, is read and kept under its old pid.
    old = first[1][0]
    assert any(
        p.pid == old and p.threads and r.t >= restarted["killed_t"]
        for r in stacks
        for p in r.processes
    ), "the killed rank's last native chunk was lost"


def test_the_text_report_says_which_rank_restarted_under_which_pid(
    restarted: dict[str, Any],
) -> None:
    run_dir = restarted["run_dir"]
    shown = subprocess.run(
        [*TORCHTOP, "analyze", str(run_dir)], capture_output=True, text=True, timeout=120
    )
    assert shown.returncode == 0, shown.stderr
    first, second = restarted["first"], restarted["second"]
    for rank in (0, 1):
        words = f"restarted · PID {second[rank][0]} (was {first[rank][0]}); its samples kept"
        assert words in shown.stdout, shown.stdout


def test_a_rank_that_joins_the_job_later_is_shown_within_10_s_of_its_start(tmp_path: Path) -> None:
    join_file, run_dir = tmp_path / "join", tmp_path / "run"
    job = subprocess.Popen(
        _joining(free_port(), join_file), stdout=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        told = Told(job, SAID)
        first = {rank: int(said["pid"]) for rank, said in told.ranks(2).items()}
        options = ["--headless", "--for", "30", "--format", "json", "--run-dir", str(run_dir)]
        attach = subprocess.Popen(
            [*TORCHTOP, "attach", str(first[0]), *options],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        _sampling(run_dir, set(first.values()))
        join_file.touch()
        joined = {rank: int(said["pid"]) for rank, said in told.ranks(3).items()}
        started = psutil.Process(joined[2]).create_time()  # the kernel's word for it
        stdout, stderr = attach.communicate(timeout=180)
    finally:
        end_all(job)
    assert attach.returncode == 0, stderr
    report = json.loads(stdout)
    assert [(r["rank"], r["pid"]) for r in report["ranks"]] == sorted(joined.items())
    assert report["source"]["attached"]["job"] == f"3 ranks under PID {job.pid}"
    changes = _records(run_dir / "samples" / "ranks.jsonl")
    shown_t = min(r.t for r in changes if any(x.pid == joined[2] for x in r.ranks))
    assert shown_t - started <= SHOWN_WITHIN_S
    (rank_2,) = [r for r in report["ranks"] if r["rank"] == 2]
    assert rank_2["steps"]["stack_samples"] > 0, "the rank that joined is sampled"
    assert "restarts" not in rank_2


def _joining(port: int, join_file: Path) -> list[str]:
    """Ranks 0 and 1 started by one shell with the shared rendezvous (as `srun` would), training
    apart (`DDP=0`); rank 2 once `join_file` exists (an elastic scale-up)."""
    job = WORKLOADS / "ddp_ranks_told.py"
    one = f"MASTER_ADDR=127.0.0.1 MASTER_PORT={port} WORLD_SIZE=3 DDP=0 {sys.executable} {job}"
    wait = f"while [ ! -e {join_file} ]; do sleep 0.2; done"
    return ["bash", "-c", f"RANK=0 {one} & RANK=1 {one} & {wait}; RANK=2 {one} & wait"]


def test_a_rank_restarted_twice_names_both_earlier_pids_oldest_first_and_a_new_number_joins() -> (
    None
):
    found = [AttachedRank(pid=10, rank=0), AttachedRank(pid=11, rank=1)]
    seen = [
        RanksSeen(t=100.0, ranks=[AttachedRank(pid=10, rank=0), AttachedRank(pid=21, rank=1)]),
        RanksSeen(t=200.0, ranks=[AttachedRank(pid=10, rank=0), AttachedRank(pid=31, rank=1),
                                  AttachedRank(pid=32, rank=2)]),
    ]  # fmt: skip
    followed = followed_ranks(found, seen)
    assert [(rank.rank, rank.pid, earlier) for rank, earlier in followed] == [
        (0, 10, {}),
        (1, 31, {11: 100.0, 21: 200.0}),
        (2, 32, {}),
    ]


def test_the_restarted_ranks_go_on_in_the_same_prometheus_series_their_info_naming_the_new_pids(
    restarted: dict[str, Any],
) -> None:
    before, after = restarted["scraped"]

    def series(samples: list[Sample]) -> set[tuple[tuple[str, str], ...]]:
        return {
            tuple(sorted(s.labels.items())) for s in samples if s.name == "torchtop_breakdown_ratio"
        }

    assert series(before) == series(after)
    assert {labels["rank"] for labels in map(dict, series(after))} == {"0", "1"}
    assert not any("pid" in s.labels for s in after if s.name != "torchtop_rank_info")
    for samples, told in ((before, restarted["first"]), (after, restarted["second"])):
        info = {
            s.labels["rank"]: s.labels["pid"] for s in samples if s.name == "torchtop_rank_info"
        }
        assert info == {str(rank): str(pid) for rank, (pid, _) in told.items()}
