"""The profiler's chatter stays out of the job's stderr and is kept in the run folder.

torch 2.x's Kineto prints `USDT: ... profiler_start` and `profiler_stop` on stderr for every
window, here on a CPU build; on CUDA builds without a GPU it also logs `gpuGetDeviceCount
failed` (that one cannot be produced without a CUDA build: it is written here in Kineto's log
format, through the same file descriptor, to check it is kept and reported as a problem).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from tests.agent.running import run_job
from torchtop.agent.profiler_output import ProfilerOutput
from torchtop.runs.layout import RunLayout

KINETO_ERROR = (
    b"ERROR:2026-11-24 09:12:46 19667:19667 DeviceProperties.cpp:47] "
    b"gpuGetDeviceCount failed with code 35\n"
)
PROFILER_WORDS = re.compile(r"USDT|STAGE:|profiler_start|profiler_stop|gpuGetDeviceCount")


def test_kineto_lines_go_to_the_log_and_the_jobs_own_lines_back_to_its_stderr(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    output = ProfilerOutput(tmp_path / "logs" / "profiler-1.log")

    def profiler_call() -> int:
        os.write(2, KINETO_ERROR)
        os.write(2, b"job thread 7\n")
        os.write(2, b"USDT:2026-11-24 09:12:46 19667:19667 X.cpp:52] profiler_start\n")
        return 42

    assert output.call(profiler_call) == 42
    captured = capfd.readouterr()
    assert captured.err == "job thread 7\n"
    log = (tmp_path / "logs" / "profiler-1.log").read_text()
    assert "gpuGetDeviceCount failed with code 35" in log and "profiler_start" in log
    assert output.take_problems() == ["ERROR: gpuGetDeviceCount failed with code 35"]
    assert output.take_problems() == [], "each problem is given once"


def test_what_the_profiler_prints_after_a_failed_call_is_still_sorted(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    output = ProfilerOutput(tmp_path / "profiler.log")

    def failing() -> None:
        os.write(2, b"W1124 09:12:46.123456  19667 init.cpp:12] CUPTI initialization failed\n")
        raise RuntimeError("no device")

    with pytest.raises(RuntimeError):
        output.call(failing)
    assert capfd.readouterr().err == ""
    assert output.take_problems() == ["W: CUPTI initialization failed"]
    os.write(2, b"after the call\n")
    assert capfd.readouterr().err == "after the call\n", "stderr is the job's again"


@pytest.mark.slow
def test_a_job_profiled_by_the_agent_prints_exactly_its_own_lines(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    windows = {"TORCHTOP_WINDOW_FIRST_STEP": "3", "TORCHTOP_WINDOW_EVERY_S": "0.2"}
    job = run_job(run_dir, "chatty", extra_env=windows)
    assert job.returncode == 0, job.stderr[-2000:]
    match = re.fullmatch(r"job: (\d+) steps, the thread wrote (\d+) lines\n", job.stdout)
    assert match is not None, job.stdout
    steps, written = int(match.group(1)), int(match.group(2))
    lines = job.stderr.splitlines()
    assert not [line for line in lines if PROFILER_WORDS.search(line)]
    step_lines = [line for line in lines if line.startswith("job step ")]
    thread_lines = [line for line in lines if line.startswith("job thread ")]
    assert step_lines == [f"job step {i}" for i in range(steps)]
    # A thread line written during a profiler call is given back a few ms late: count, not order.
    assert sorted(thread_lines) == sorted(f"job thread {k}" for k in range(written))
    assert len(lines) == steps + written, "nothing else on stderr"
    assert len(list((run_dir / "traces").glob("*.pt.trace.json.gz"))) >= 2
    pid = int(job.event_files()[0].stem.split("-")[1])
    log = RunLayout(run_dir).profiler_log(pid).read_text()
    assert log.count("profiler_start") >= 2, "this torch build prints them: they went here"
