"""`attach` to a real CPU job with busy processes beside it names them in a contention finding.

The job was started by the test, not by torchtop, as a user's job is; the busy loops too.
`attach` has no agent inside, so the job's steps are py-spy samples, but its host samples are
the same as `run`'s: the others' CPU and the job's run-queue wait (tests/live/test_contention.py
holds the quiet case).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.busy import busy_processes, contended_count
from tests.live.test_contention import (
    JOB,
    WATCH_S,
    WITHIN_S,
    contention_finding,
    fixes_that_add_threads,
    job_environment,
    named_pids,
)


@pytest.mark.slow
@pytest.mark.alone
def test_attach_names_the_busy_processes_beside_a_cpu_job_and_offers_no_fix_that_adds_threads(
    tmp_path: Path,
) -> None:
    with busy_processes(contended_count()) as busy:
        job = subprocess.Popen(JOB, stdout=subprocess.PIPE, text=True, env=job_environment())
        try:
            assert job.stdout is not None
            line = job.stdout.readline()
            assert line.startswith("training with"), line
            threads = int(line.split()[2])
            started = time.monotonic()
            result = subprocess.run(
                [
                    *(sys.executable, "-m", "torchtop", "attach", str(job.pid), "--headless"),
                    *("--for", str(WATCH_S), "--run-dir", str(tmp_path / "run")),
                    *("--report", str(tmp_path / "report.json")),
                ],
                capture_output=True,
                text=True,
                timeout=120,
            )
            took_s = time.monotonic() - started
            assert job.poll() is None, "attach must never stop the job it watches"
        finally:
            job.kill()
            job.wait()
    assert result.returncode == 0, result.stderr[-2000:]
    assert took_s < WITHIN_S
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["source"]["kind"] == "attach"
    finding = contention_finding(report)
    assert finding is not None, [f["message"] for f in report["findings"]]
    assert named_pids(finding) & set(busy), finding["message"]
    assert job.pid not in named_pids(finding), "the job is no tenant of its own machine"
    assert fixes_that_add_threads(report, threads) == []
