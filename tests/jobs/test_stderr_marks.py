"""The job's output as the `o` screen reads it: its stderr, copied into the merged log, notes
where each piece landed, so the screen tells stderr lines from stdout ones by the record
(checked against the job's own `stderr.log`); a Python job's prints reach the log as printed."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from tests.conftest import WORKLOADS
from torchtop.jobs.job import Output, start
from torchtop.runs.output_tail import LogTail, stderr_marks

TALKING = WORKLOADS / "talking.py"


def test_the_lines_marked_stderr_in_job_log_are_exactly_the_jobs_stderr(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    command = [sys.executable, str(TALKING), "--steps", "40", "--step-s", "0.02"]
    job = start(command, run_dir, "run", output=Output.log(run_dir / "job.log"))
    assert job.record_exit().how == "exited"
    lines = LogTail(run_dir / "job.log").read().lines
    assert stderr_marks(run_dir / "job.log").is_file()
    said = (run_dir / "stderr.log").read_text().splitlines()
    assert [line.text for line in lines if line.stderr] == said
    assert len(said) == 8  # every fifth of 40 steps
    assert all(line.text.startswith("step ") for line in lines if not line.stderr)
    assert sum(not line.stderr for line in lines) == 40


def test_a_print_without_flush_reaches_the_log_while_the_job_still_runs(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    command = [sys.executable, "-c", "import time; print('hello'); time.sleep(60)"]
    job = start(command, run_dir, "run", output=Output.log(run_dir / "job.log"), agent=False)
    try:
        deadline = time.monotonic() + 30
        while "hello" not in (run_dir / "job.log").read_text():
            assert time.monotonic() < deadline, "the line stayed in the job's buffer"
            time.sleep(0.1)
        assert job.poll() is None  # seen while the job runs, not flushed at its exit
    finally:
        job.finish()
