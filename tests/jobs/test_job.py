"""Real jobs started and stopped: the job's own cleanup runs, nothing of its tree survives,
`exit.json` says how it ended, and its output lands where it was sent."""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import msgspec
import psutil
import pytest

from tests.conftest import CLEANS_UP
from torchtop.advice.plan import initial_plan
from torchtop.jobs.job import Job, Output, start, start_plan
from torchtop.jobs.processes import is_alive
from torchtop.jobs.records import default_run_dir
from torchtop.runs.records import ExitRecord

DEAF = (
    "import signal, time; signal.signal(signal.SIGINT, signal.SIG_IGN); "
    "signal.signal(signal.SIGTERM, signal.SIG_IGN); print('ready', flush=True); time.sleep(120)"
)
LEAVES_A_DEAF_CHILD = f"""
import subprocess, sys, time
from pathlib import Path
child = subprocess.Popen(
    [sys.executable, "-c", {DEAF!r}], start_new_session=True, stdout=subprocess.PIPE, text=True
)
child.stdout.readline()
Path(sys.argv[1]).write_text(str(child.pid))
time.sleep(120)
"""


def wait_for(found: Callable[[], bool], job: Job, what: str, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not found():
        assert job.poll() is None, f"the job ended before {what}"
        assert time.monotonic() < deadline, f"no {what} in {timeout_s} s"
        time.sleep(0.05)


def test_a_graceful_stop_lets_the_jobs_own_cleanup_run(tmp_path: Path) -> None:
    done = tmp_path / "done"
    job = start([sys.executable, str(CLEANS_UP), str(done)], tmp_path / "run", "run")
    try:
        wait_for((tmp_path / "ready").exists, job, "ready file")
    finally:
        ending = job.finish(grace_s=10.0)
    assert done.read_text() == "cleaned up"
    # The KeyboardInterrupt ended it: SIGINT was enough, nothing harder was sent.
    assert (ending.how, ending.signal, ending.exit_status) == ("stopped", "SIGINT", None)
    assert job.ending == ending
    written = (tmp_path / "run" / "exit.json").read_bytes()
    assert msgspec.json.decode(written, type=ExitRecord) == ending


@pytest.mark.parametrize("thread", ["main", "other"])
def test_a_job_started_where_sigint_is_ignored_still_gets_the_graceful_stop(
    tmp_path: Path, thread: str
) -> None:
    """torchtop started by a script's `&` (a shell without job control) has SIGINT ignored,
    and an ignored signal stays ignored across exec: the job would sleep through the SIGINT and
    die to the SIGTERM, its cleanup skipped. The trial and dashboard threads start jobs too."""
    done = tmp_path / "done"
    command = [sys.executable, str(CLEANS_UP), str(done)]
    started: list[Job] = []
    saved = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        if thread == "main":
            started.append(start(command, tmp_path / "run", "run"))
        else:
            starter = threading.Thread(
                target=lambda: started.append(start(command, tmp_path / "run", "run"))
            )
            starter.start()
            starter.join(60)
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN  # torchtop's own is left as is
    finally:
        signal.signal(signal.SIGINT, saved)
    (job,) = started
    try:
        wait_for((tmp_path / "ready").exists, job, "ready file")
    finally:
        ending = job.finish(grace_s=10.0)
    assert done.read_text() == "cleaned up"
    assert (ending.how, ending.signal) == ("stopped", "SIGINT")


def test_a_child_deaf_to_signals_in_a_session_of_its_own_does_not_survive_the_stop(
    tmp_path: Path,
) -> None:
    pid_file = tmp_path / "child.pid"
    command = [sys.executable, "-c", LEAVES_A_DEAF_CHILD, str(pid_file)]
    job = start(command, tmp_path / "run", "run", output=Output.log(tmp_path / "job.log"))
    try:
        wait_for(pid_file.exists, job, "child pid")
        child = psutil.Process(int(pid_file.read_text()))
        assert is_alive(child) and child.ppid() == job.pid
        assert os.getsid(child.pid) != os.getsid(job.pid)  # out of reach of the group's signals
    finally:
        job.finish(grace_s=1.0)
    assert not is_alive(child)


@pytest.mark.parametrize(
    ("source", "how", "exit_status", "signal_name"),
    [
        ("pass", "exited", 0, None),
        ("import sys; sys.exit(3)", "crashed", 3, None),
        ("import os, signal; os.kill(os.getpid(), signal.SIGKILL)", "killed", None, "SIGKILL"),
    ],
    ids=["exited", "crashed", "killed"],
)
def test_a_job_that_ended_by_itself_is_recorded_as_it_ended(
    tmp_path: Path, source: str, how: str, exit_status: int | None, signal_name: str | None
) -> None:
    job = start([sys.executable, "-c", source], tmp_path / "run", "run")
    job.process.wait(timeout=60)
    ending = job.finish()
    assert (ending.how, ending.exit_status, ending.signal) == (how, exit_status, signal_name)
    duration_s = ending.duration_s
    assert isinstance(duration_s, float) and duration_s >= 0
    assert job.shell_status() == (exit_status if exit_status is not None else 128 + 9)


SAYS_BOTH = "import sys; print('to stdout', flush=True); print('to stderr', file=sys.stderr)"


def test_a_log_takes_both_streams_and_a_plan_gets_a_file_for_each(tmp_path: Path) -> None:
    log = tmp_path / "job.log"
    one = start([sys.executable, "-c", SAYS_BOTH], tmp_path / "one", "run", output=Output.log(log))
    assert one.process.wait(timeout=60) == 0
    ending = one.record_exit()  # stderr is copied into the log until the job is reaped
    assert log.read_text().splitlines() == ["to stdout", "to stderr"]
    assert (ending.stderr_tail, ending.log) == (["to stderr"], str(log))

    plan = initial_plan([sys.executable, "-c", SAYS_BOTH], {"PATH": "/usr/bin"}, str(tmp_path))
    two = start_plan(plan, tmp_path / "two")
    assert two.process.wait(timeout=60) == 0
    assert (tmp_path / "two" / "stdout.log").read_text() == "to stdout\n"
    assert (tmp_path / "two" / "stderr.log").read_text() == "to stderr\n"


def test_a_plan_runs_in_its_own_folder_with_its_own_environment(tmp_path: Path) -> None:
    probe = "import os; print(os.getcwd()); print(os.environ['MARK'])"
    plan = initial_plan([sys.executable, "-c", probe], {"MARK": "planned"}, str(tmp_path))
    job = start_plan(plan, tmp_path / "run")
    assert job.process.wait(timeout=60) == 0
    said = (tmp_path / "run" / "stdout.log").read_text().splitlines()
    assert said == [str(tmp_path), "planned"]


def test_a_process_that_ended_is_not_alive_even_before_it_is_reaped(tmp_path: Path) -> None:
    job = start([sys.executable, "-c", "pass"], tmp_path / "run", "run")
    process = psutil.Process(job.pid)
    deadline = time.monotonic() + 60
    while process.status() != psutil.STATUS_ZOMBIE and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not is_alive(process) and not is_alive(job.pid)
    job.process.wait()
    assert not is_alive(process)
    assert is_alive(psutil.Process())


def test_a_second_run_in_the_same_second_gets_a_folder_of_its_own(tmp_path: Path) -> None:
    first = default_run_dir(tmp_path)
    first.mkdir()
    second = default_run_dir(tmp_path)
    assert second != first and not second.exists()
    assert second.parent == tmp_path
