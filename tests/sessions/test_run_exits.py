"""A job that fails under `torchtop run` shows why: the exit and its last stderr lines in the
text and JSON reports, torchtop's exit status is the job's, and a job that cannot start says so
in its program's own words. A rank that aborts after Python's exit is named by its signal."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import CLEANS_UP, WORKLOADS, signal_once_there
from tests.workloads.crashes import LAST_LINE

JOBS = WORKLOADS
pytestmark = pytest.mark.slow


def torchtop_run(
    tmp_path: Path, *args: str, timeout_s: float = 240
) -> subprocess.CompletedProcess[str]:
    run_dir = str(tmp_path / "run")
    return subprocess.run(
        [sys.executable, "-m", "torchtop", "run", "--headless", "--run-dir", run_dir, *args],
        capture_output=True,
        text=True,
        timeout=timeout_s,
        cwd=tmp_path,
        env={k: v for k, v in os.environ.items() if not k.startswith("TORCHTOP_")},
    )


def test_a_job_that_crashes_shows_its_traceback_and_torchtop_exits_with_its_status(
    tmp_path: Path,
) -> None:
    report_path = tmp_path / "report.json"
    result = torchtop_run(
        tmp_path, "--report", str(report_path), "--", sys.executable, str(JOBS / "crashes.py")
    )
    assert result.returncode == 1, result.stderr[-2000:]
    assert LAST_LINE in result.stderr  # the job's own stderr, copied on as it came
    # Its stdout too goes to stderr, said once: stdout is the report alone (`> report.txt`).
    assert "trained" in result.stderr.splitlines() and "trained" not in result.stdout
    assert "the job's output on stderr, the report on stdout" in result.stderr
    text = result.stdout
    assert text.startswith("torchtop run · ")
    exit_at = text.index("EXIT  the job crashed with exit status 1")
    assert text.index(LAST_LINE) > exit_at and text.index("VERDICT") > exit_at  # cause first
    assert f"{tmp_path / 'run' / 'stderr.log'}" in text or "run/stderr.log" in text
    ending = json.loads(report_path.read_text())["exit"]
    assert (ending["how"], ending["status"], ending["signal"]) == ("crashed", 1, None)
    assert ending["stderr_tail"][-1] == LAST_LINE
    assert ending["stderr_tail"][0] == "Traceback (most recent call last):"


def test_the_json_report_of_a_crashed_job_carries_its_exit_and_stderr_names_it(
    tmp_path: Path,
) -> None:
    result = torchtop_run(
        tmp_path, "--format", "json", "--", sys.executable, str(JOBS / "crashes.py")
    )
    assert result.returncode == 1, result.stderr[-2000:]
    report = json.loads(result.stdout)  # stdout is the report alone
    assert report["exit"]["status"] == 1 and report["exit"]["stderr_tail"][-1] == LAST_LINE
    assert report["exit"]["log"].endswith("job.log")
    assert LAST_LINE in Path(report["exit"]["log"]).read_text()
    assert "torchtop: the job crashed with exit status 1" in result.stderr
    assert report["steps"]["count"] and report["steps"]["count"] >= 10  # the steps it ran


def test_a_script_that_does_not_exist_is_said_in_pythons_words_with_no_empty_report(
    tmp_path: Path,
) -> None:
    result = torchtop_run(tmp_path, "--", sys.executable, "nonexistent.py", timeout_s=120)
    assert result.returncode == 2, result.stderr  # python's own status for it
    assert "can't open file" in result.stdout and "nonexistent.py" in result.stdout
    assert "VERDICT" not in result.stdout and "FINDINGS" not in result.stdout
    assert len(result.stdout.strip().splitlines()) <= 4, result.stdout


def test_a_rank_that_aborts_after_python_exit_is_reported_with_sigabrt(tmp_path: Path) -> None:
    report_path = tmp_path / "report.json"
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2"]
    result = torchtop_run(
        tmp_path, "--report", str(report_path), "--", *command, str(JOBS / "ddp_abort_at_exit.py")
    )
    assert result.returncode == 1, result.stderr[-3000:]  # torchrun's status for a failed rank
    assert "exitcode  : -6" in result.stderr  # torchrun itself saw the abort
    report = json.loads(report_path.read_text())
    ended = {r["rank"]: r["ended"] for r in report["ranks"]}
    assert ended[1] == "signal SIGABRT", ended
    # Rank 0 exits 0 a second later, unless torchrun's SIGTERM for the failure reaches it first.
    assert ended[0] in ("exit 0", "signal SIGTERM"), ended
    assert "ended: signal SIGABRT" in result.stdout
    note = "the job crashed with exit status 1; rank 1 failed first: signal SIGABRT"
    assert note in report["notes"] and note in result.stdout


def test_a_job_that_dies_of_out_of_memory_is_named_so_with_its_device(tmp_path: Path) -> None:
    from tests.workloads.out_of_memory import MESSAGE

    report_path = tmp_path / "report.json"
    result = torchtop_run(
        tmp_path, "--report", str(report_path), "--", sys.executable, str(JOBS / "out_of_memory.py")
    )
    assert result.returncode == 1, result.stderr[-2000:]
    found = json.loads(report_path.read_text())["out_of_memory"]
    assert found["message"] == f"torch.OutOfMemoryError: {MESSAGE}"
    assert found["device"] == "cuda:0"
    # The agent's windows record no memory: no peak is invented.
    assert found["last_peak_bytes"] is None
    assert "out of memory on cuda:0; no peak was measured" in result.stdout


def test_a_cpu_job_that_runs_out_of_memory_reports_its_highest_resident_set_as_the_last_peak(
    tmp_path: Path,
) -> None:
    report_path = tmp_path / "report.json"
    job = [sys.executable, str(JOBS / "grows_memory.py"), "oom"]
    result = torchtop_run(tmp_path, "--report", str(report_path), "--", *job)
    assert result.returncode == 1, result.stderr[-2000:]
    report = json.loads(report_path.read_text())
    found = report["out_of_memory"]
    assert "DefaultCPUAllocator: can't allocate memory" in found["message"]
    assert (found["device"], found["last_peak_of"]) == ("cpu", "resident set")
    (host,) = [m for m in report["memory"] if m["device"] == "host"]
    # The peak is the agent's highest step reading, and holds the 8 x 32 MiB the job kept.
    steps = [
        json.loads(line)
        for line in next((tmp_path / "run" / "events").glob("agent-*.jsonl"))
        .read_text()
        .splitlines()
    ]
    highest = max(s.get("rss_bytes", 0) for s in steps if s["kind"] == "step")
    assert found["last_peak_bytes"] == host["peak_allocated_bytes"] == highest
    assert highest > 8 * 32 * 2**20
    assert f"out of memory on cpu; the last peak measured: {highest / 2**30:.2f} GiB" in (
        result.stdout
    )


def test_a_sigterm_to_torchtop_stops_its_job_as_ctrl_c_does_and_keeps_the_report(
    tmp_path: Path,
) -> None:
    """`timeout 3600 torchtop run ...`, a `kill`, a scheduler's stop: torchtop ends as on Ctrl-C,
    the job's cleanup runs and the report is written, rather than torchtop dying and its job
    running on unwatched in its own session. Started as a script's `&` starts it, with SIGINT
    ignored, which the job must not inherit."""
    done = tmp_path / "done"
    run_dir = tmp_path / "run"
    command = [sys.executable, "-m", "torchtop", "run", "--headless", "--run-dir", str(run_dir)]
    torchtop = subprocess.Popen(
        [*command, "--", sys.executable, str(CLEANS_UP), str(done)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
        env={k: v for k, v in os.environ.items() if not k.startswith("TORCHTOP_")},
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),
    )
    stdout, stderr = signal_once_there(torchtop, tmp_path / "ready", signal.SIGTERM)
    assert torchtop.returncode == 0, stderr[-2000:]
    assert done.read_text() == "cleaned up"
    ending = json.loads((run_dir / "exit.json").read_text())
    assert (ending["how"], ending["signal"]) == ("stopped", "SIGINT")
    assert json.loads((run_dir / "report.json").read_text())["exit"]["how"] == "stopped"
    assert "the job stopped (SIGINT)" in stdout
