"""The kit's steps that watch a job from outside its launch: `torchtop attach` (stacks only) on
a job started bare, and the headless dashboard (dash_check.py) on a live job."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

from dash_check import PANEL_LINE
from kit_lines import parse_lines
from kit_plan import Step
from kit_steps import HERE, START_MARGIN_S, Kit, StepResult, _kill, environment, read_report, timed

FIRST_LINE_S = 120.0
"""How long a bare job may take to print its first KIT line (CUDA start-up, first steps)."""


def wait_for_loop(log: Path, job: subprocess.Popen[bytes], timeout_s: float) -> bool:
    """Until the job printed a KIT line (its loop runs); False if it ended or took too long."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and job.poll() is None:
        if parse_lines(log.read_text(errors="replace")):
            return True
        time.sleep(0.25)
    return False


def attach_step(kit: Kit, step: Step, seconds: float) -> StepResult:
    """The job started bare; once its loop runs, `torchtop attach PID` (no --inject) watches
    it for `seconds`; the job is killed afterwards."""
    result, folder = StepResult(step.key), kit.work / step.key.replace(":", "-")
    folder.mkdir(parents=True, exist_ok=True)
    job_log = folder / "job.txt"
    with job_log.open("wb") as out:
        job = subprocess.Popen(kit.job_command(step.job), stdout=out, stderr=subprocess.STDOUT,
                               env=environment(), start_new_session=True)  # fmt: skip
    try:
        if not wait_for_loop(job_log, job, FIRST_LINE_S):
            result.status = f"error (the bare job printed no KIT line; exit {job.poll()})"
            result.log_tail = job_log.read_text(errors="replace")[-3000:]
            return result
        report = folder / "report.json"
        watch = ["--headless", "--for", f"{seconds:g}", "--report", str(report)]
        command = kit.torchtop("attach", str(job.pid), *watch, "--run-dir", str(folder / "run"))
        timed(result, command, kit.box(seconds + START_MARGIN_S), folder / "log.txt")
        result.report = read_report(report)
    finally:
        _kill(job)
    return result


def dashboard_step(kit: Kit, step: Step, seconds: float) -> StepResult:
    """dash_check.py on the job: the Devices panel's text after `seconds` of a live job."""
    result, folder = StepResult(step.key), kit.work / step.key.replace(":", "-")
    command = [kit.python, str(HERE / "dash_check.py"), "--run-dir", str(folder / "run"),
               "--for", f"{seconds:g}", "--rules", str(kit.rules),
               "--", *kit.job_command(step.job)]  # fmt: skip
    timed(result, command, kit.box(seconds + START_MARGIN_S), folder / "log.txt")
    for line in Path(result.log or "").read_text(errors="replace").splitlines():
        if line.startswith(PANEL_LINE):
            result.extra["panel"] = json.loads(line[len(PANEL_LINE) :])
    return result
