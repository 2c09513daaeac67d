"""`torchtop attach` on a job of several ranks that torchtop did not start: on the `torchrun`
launcher's PID, or on any rank's, it finds the job's ranks, shows each one and the job's
verdict, and says what it attached to. The outside truth is what each rank prints of itself
(its RANK and its pid) and the planted bottleneck (every rank waits on a sleeping dataset)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import queue
import re
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import psutil
import pytest
from rich.text import Text

from tests.conftest import WORKLOADS
from tests.live.two_nodes import free_port
from torchtop.assess.recorded import analyze_run
from torchtop.diagnosis.rules import load_rules
from torchtop.runs.state import load_run
from torchtop.tui.app import Dashboard
from torchtop.tui.frame import offline_frame
from torchtop.tui.widgets.panel import Panel

TORCHTOP = [sys.executable, "-m", "torchtop"]
JOB = WORKLOADS / "ddp_ranks_told.py"
TOLD = re.compile(r"rank (\d+) pid (\d+)")


@dataclass
class Job:
    process: subprocess.Popen[str]
    """What the test started: the launcher, or `torchtop run` in front of it."""
    ranks: dict[int, int]
    """Each rank's pid by its RANK, as the ranks printed them."""


def torchrun(port: int) -> list[str]:
    return [
        sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2",
        "--master-port", str(port), str(JOB),
    ]  # fmt: skip


@pytest.fixture(scope="module")
def job() -> Iterator[Job]:
    """A 2-rank gloo DDP job under torchrun, started without torchtop; runs until the end."""
    with started(torchrun(free_port())) as running:
        yield running


@pytest.fixture(scope="module")
def on_launcher(job: Job, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Any, Path]:
    """`attach <launcher pid> --headless --format json` for 10 s: stderr, the report, the run."""
    run_dir = tmp_path_factory.mktemp("attach") / "run"
    stderr, report = attach(job.process.pid, "10", run_dir)
    return stderr, report, run_dir


def test_attach_on_torchrun_shows_both_ranks_with_the_pids_and_numbers_the_ranks_print(
    job: Job, on_launcher: tuple[str, Any, Path]
) -> None:
    _, report, _ = on_launcher
    attached = report["source"]["attached"]
    assert attached["role"] == "launcher"
    assert attached["pid"] == attached["root_pid"] == job.process.pid
    assert report["source"]["pid"] == job.process.pid
    assert attached["numbered_by"] == "environment"
    assert {r["rank"]: r["pid"] for r in attached["ranks"]} == job.ranks
    assert [(r["rank"], r["pid"]) for r in report["ranks"]] == sorted(job.ranks.items())
    for rank in report["ranks"]:
        assert rank["label"] == f"rank {rank['rank']}"
        assert rank["steps"]["stack_samples"] >= 5, "each rank is assessed from its own samples"
        assert rank["ended"] is None
    assert job.process.poll() is None, "attach must never stop the job it watches"


def test_attach_on_torchrun_names_the_planted_bottleneck_for_the_job_and_each_rank(
    on_launcher: tuple[str, Any, Path],
) -> None:
    _, report, _ = on_launcher
    assert report["bottleneck"] == "dataloader", report["verdict"]
    assert report["findings"][0]["rule"] == "dataloader-starved"
    for rank in report["ranks"]:
        # Each rank sleeps in its DataLoader; the one that loads faster waits for its peer in
        # the all-reduce, which native frames can see: its own verdict may name that wait.
        assert rank["breakdown"]["dataloader"] >= 0.4, rank
        assert rank["bottleneck"] in ("dataloader", "communication"), rank
    # The job's samples are the ranks' samples pooled: a record holds both ranks' stacks.
    assert report["steps"]["stack_samples"] >= min(
        r["steps"]["stack_samples"] for r in report["ranks"]
    )


def test_attach_on_torchrun_says_in_one_line_what_it_attached_to(
    job: Job, on_launcher: tuple[str, Any, Path]
) -> None:
    stderr, _, _ = on_launcher
    launcher, (pid0, pid1) = job.process.pid, (job.ranks[0], job.ranks[1])
    assert stderr.splitlines()[0] == (
        f"torchtop: PID {launcher} is torch.distributed.run; watching its 2 ranks: "
        f"rank 0 PID {pid0}, rank 1 PID {pid1} (stack samples, no agent inside)"
    )


def test_attach_on_rank_1_finds_the_same_job_and_says_so(job: Job, tmp_path: Path) -> None:
    stderr, report = attach(job.ranks[1], "6", tmp_path / "run")
    launcher = job.process.pid
    assert stderr.splitlines()[0].startswith(
        f"torchtop: PID {job.ranks[1]} is rank 1 of torch.distributed.run PID {launcher}: "
        "watching the job's 2 ranks: "
    )
    attached = report["source"]["attached"]
    assert (attached["role"], attached["pid"], attached["root_pid"]) == (
        "rank",
        job.ranks[1],
        launcher,
    )
    assert [(r["rank"], r["pid"]) for r in report["ranks"]] == sorted(job.ranks.items())
    # The launch record names the job for the report and the dashboard of `view` later.
    launch = json.loads((tmp_path / "run" / "run.json").read_text())
    assert launch["pid"] == launcher and launch["attached"]["pid"] == job.ranks[1]


def test_inject_on_the_launcher_is_refused_in_one_line_naming_the_ranks_to_choose_from(
    job: Job, tmp_path: Path
) -> None:
    run_dir = tmp_path / "run"
    refused = subprocess.run(
        [*TORCHTOP, "attach", str(job.process.pid), "--inject", "--headless", "--run-dir",
         str(run_dir)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert refused.returncode == 2, refused.stderr
    assert refused.stdout == ""
    (line,) = refused.stderr.splitlines()
    assert line.startswith(f"torchtop: PID {job.process.pid}: is torch.distributed.run and ")
    assert f"rank 0 PID {job.ranks[0]}, rank 1 PID {job.ranks[1]}" in line
    assert not run_dir.exists()
    assert job.process.poll() is None


def test_the_dashboard_of_an_attach_names_the_launcher_and_lists_both_ranks(
    job: Job, on_launcher: tuple[str, Any, Path]
) -> None:
    _, _, run_dir = on_launcher
    report = analyze_run(run_dir, load_rules())
    assert report is not None
    app = Dashboard(frame=offline_frame(report, load_run(run_dir)))

    async def shown() -> tuple[str, str]:
        async with app.run_test(size=(160, 48)) as pilot:
            await pilot.pause()
            return text(app, "#header"), text(app, "#ranks")

    header, ranks = asyncio.run(shown())
    assert f"attached to torch.distributed.run PID {job.process.pid}, 2 ranks" in header
    assert "2 ranks" in header.splitlines()[1]
    rows = ranks.splitlines()[1:]  # under the column heads
    assert [row.split()[:2] for row in rows] == [["rank", "0"], ["rank", "1"]]
    assert all("n/a" in row for row in rows), ranks  # no step timed: none shown as 0 ms


def test_attach_on_a_rank_of_a_torchtop_run_job_follows_its_agents_folder(
    tmp_path: Path,
) -> None:
    run_dir = tmp_path / "run"
    command = [*TORCHTOP, "run", "--headless", "--for", "90", "--run-dir", str(run_dir), "--"]
    with started([*command, *torchrun(free_port())]) as running:
        stepping(run_dir, ranks=2)
        stderr, report = attach(running.ranks[1], "4", tmp_path / "unused")
    assert f"through its agent's run folder {run_dir}" in stderr.splitlines()[0]
    assert stderr.splitlines()[0].startswith(f"torchtop: PID {running.ranks[1]} is rank 1 of ")
    assert not (tmp_path / "unused").exists(), "with an agent, attach records nothing itself"
    attached = report["source"]["attached"]
    assert {r["rank"]: r["pid"] for r in attached["ranks"]} == running.ranks
    assert sorted((r["rank"], r["pid"]) for r in report["ranks"]) == sorted(
        running.ranks.items()
    ), [(r["rank"], r["pid"], r["label"], r["ended"]) for r in report["ranks"]]
    assert report["steps"]["count"] >= 1, "the agent's steps, not stack samples"


def attach(pid: int, for_s: str, run_dir: Path) -> tuple[str, Any]:
    options = ["--headless", "--for", for_s, "--format", "json", "--run-dir", str(run_dir)]
    result = subprocess.run(
        [*TORCHTOP, "attach", str(pid), *options], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    return result.stderr, json.loads(result.stdout)


@contextmanager
def started(command: list[str], tries: int = 2) -> Iterator[Job]:
    """`command` in its own session; each rank's `rank R pid P` line read from its stdout or
    its stderr, where `torchtop run --headless` puts the job's stdout (within a minute); it
    and every process under it killed after. A job whose ranks never tell (its launcher gone,
    a rendezvous that never completes on a loaded machine) is started once more, on a fresh
    port where the command names one and in an emptied run folder; its stderr is kept for
    the failure's message."""
    for attempt in range(tries):
        if attempt:
            command = [str(free_port()) if a.isdigit() and command[i - 1] == "--master-port"
                       else a for i, a in enumerate(command)]  # fmt: skip
            if "--run-dir" in command:  # the first try's records are not this job's
                shutil.rmtree(command[command.index("--run-dir") + 1], ignore_errors=True)
        process = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            start_new_session=True,
        )  # fmt: skip
        errors: list[str] = []
        try:
            ranks = _told_ranks(process, errors)
            if ranks is None:
                said = "".join(errors)[-2000:]
                if attempt + 1 < tries:
                    continue
                raise AssertionError(f"the ranks never told who they are; stderr:\n{said}")
            yield Job(process, ranks)
            return
        finally:
            end_all(process)


def _told_ranks(process: subprocess.Popen[str], errors: list[str]) -> dict[int, int] | None:
    """The ranks' pids from the lines of both streams, read on (so that no pipe fills) until
    the process ends; stderr's lines also kept in `errors`."""
    lines: queue.Queue[str] = queue.Queue()
    for stream, kept in ((process.stdout, None), (process.stderr, errors)):
        threading.Thread(target=_pump, args=(stream, lines, kept), daemon=True).start()
    ranks: dict[int, int] = {}
    while len(ranks) < 2:
        try:
            line = lines.get(timeout=60)
        except queue.Empty:
            return None
        for rank, pid in TOLD.findall(line):
            ranks[int(rank)] = int(pid)
    return ranks


def end_all(process: subprocess.Popen[Any]) -> None:
    """Kill `process` and every process under it: torchrun starts its ranks in sessions of
    their own, and `torchtop run` its job, so killing one process group would leave them."""
    with contextlib.suppress(psutil.NoSuchProcess):
        tree = [psutil.Process(process.pid), *psutil.Process(process.pid).children(recursive=True)]
        for member in tree:
            with contextlib.suppress(psutil.NoSuchProcess):
                member.kill()
        psutil.wait_procs(tree, timeout=30)
    process.wait()


def _pump(stream: IO[str] | None, lines: queue.Queue[str], kept: list[str] | None) -> None:
    assert stream is not None
    for line in stream:
        lines.put(line)
        if kept is not None:
            kept.append(line)


def stepping(run_dir: Path, ranks: int) -> None:
    """Until the agents of `ranks` processes have written steps past the warm-up."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        state = load_run(run_dir)
        if len([p for p in state.training_processes if p.steps_seen >= 8]) >= ranks:
            return
        time.sleep(0.5)
    raise AssertionError(f"the ranks of {run_dir} never stepped")


def text(app: Dashboard, selector: str) -> str:
    rendered = app.query_one(selector, Panel).render()
    assert isinstance(rendered, Text)
    return rendered.plain
