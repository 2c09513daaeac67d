"""`torchtop run --headless` on real commands: exit status, stopping, the run folder."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import psutil

from torchtop.runs.journal import read_record
from torchtop.runs.records import ExitRecord

TORCHTOP = [sys.executable, "-m", "torchtop"]


def run_torchtop(args: list[str], timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*TORCHTOP, *args], capture_output=True, text=True, timeout=timeout)


def test_the_jobs_own_output_and_failing_exit_status_pass_through(tmp_path: Path) -> None:
    job = "import sys; print('hello from the job'); sys.exit(3)"
    result = run_torchtop(
        ["run", "--headless", "--run-dir", str(tmp_path / "r"), "--", sys.executable, "-c", job]
    )
    assert result.returncode == 3
    # On stderr, so that stdout is the report alone (`> report.txt`).
    assert "hello from the job" in result.stderr.splitlines()
    assert "hello from the job" not in result.stdout
    ending = read_record(tmp_path / "r" / "exit.json", ExitRecord)
    assert ending is not None and (ending.how, ending.exit_status) == ("crashed", 3)
    report = json.loads((tmp_path / "r" / "report.json").read_text())
    assert report["schema"] == "torchtop.report/1"
    assert report["source"]["kind"] == "run"
    assert any("exit status 3" in note for note in report["notes"])


def test_for_stops_the_job_and_every_process_of_its_group(tmp_path: Path) -> None:
    child_pid_file = tmp_path / "child.pid"
    stubborn = "import signal,time; signal.signal(signal.SIGINT, signal.SIG_IGN); time.sleep(120)"
    job = (
        "import subprocess, sys, time; "
        f"p = subprocess.Popen([sys.executable, '-c', {stubborn!r}]); "
        f"open({str(child_pid_file)!r}, 'w').write(str(p.pid)); time.sleep(120)"
    )
    started = time.monotonic()
    result = run_torchtop(
        [
            "run",
            "--headless",
            "--for",
            "2",
            "--report",
            str(tmp_path / "report.json"),
            "--run-dir",
            str(tmp_path / "r"),
            "--",
            sys.executable,
            "-c",
            job,
        ]
    )
    assert result.returncode == 0, result.stderr
    assert time.monotonic() - started < 30
    child = int(child_pid_file.read_text())
    time.sleep(0.2)
    assert not psutil.pid_exists(child) or psutil.Process(child).status() == psutil.STATUS_ZOMBIE
    ending = read_record(tmp_path / "r" / "exit.json", ExitRecord)
    assert ending is not None and ending.how == "stopped"
    assert json.loads((tmp_path / "report.json").read_text())["bottleneck"] == "unknown"


def test_a_command_that_does_not_exist_is_one_line_and_status_2(tmp_path: Path) -> None:
    result = run_torchtop(
        ["run", "--headless", "--run-dir", str(tmp_path / "r"), "--", "no-such-command-xyz"]
    )
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "torchtop: no-such-command-xyz: command not found"
    ]


def test_run_without_a_command_is_one_line_and_status_2(tmp_path: Path) -> None:
    result = run_torchtop(["run", "--headless", "--run-dir", str(tmp_path / "r")])
    assert result.returncode == 2
    assert len(result.stderr.strip().splitlines()) == 1
    assert "nothing to run" in result.stderr


def test_a_job_killed_by_a_signal_is_reported_as_killed(tmp_path: Path) -> None:
    job = "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"
    result = run_torchtop(
        ["run", "--headless", "--run-dir", str(tmp_path / "r"), "--", sys.executable, "-c", job]
    )
    assert result.returncode == 128 + 9
    ending = read_record(tmp_path / "r" / "exit.json", ExitRecord)
    assert ending is not None and (ending.how, ending.signal) == ("killed", "SIGKILL")
    assert os.path.exists(tmp_path / "r" / "report.json")
