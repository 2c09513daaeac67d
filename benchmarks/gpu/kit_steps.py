"""Each step of the kit as a time-boxed subprocess: a planted job under `torchtop run`, bare,
under `tune --allow precision`, watched by `attach`, or under the headless dashboard.

A step never raises: what it ran, how it ended (ok, failed, timed out) and the tail of its
output are recorded, and the kit goes on. Every process a step starts is in its own process
group, killed with the group when its time box runs out.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kit_efficiency import truths
from kit_lines import figures, parse_lines
from kit_plan import CPU_ARGS, JOBS, Step

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
START_MARGIN_S = 60.0
"""A step's box beyond its watched seconds: Python, torch and CUDA start-up, the report."""
DEADLINE_GRACE_S = 20.0


@dataclass
class Kit:
    work: Path
    dry: bool
    python: str = sys.executable
    rules: Path = REPO / "rules"
    deadline: float | None = None
    """`time.monotonic()` by which the kit should end; a step's box never reaches past it by
    more than DEADLINE_GRACE_S."""

    def box(self, want_s: float) -> float:
        if self.deadline is None:
            return want_s
        return max(min(want_s, self.deadline - time.monotonic() + DEADLINE_GRACE_S), 1.0)

    def job_command(self, name: str, *extra: str) -> list[str]:
        job = JOBS[name]
        device = CPU_ARGS if self.dry else ()
        return [self.python, str(HERE / "jobs" / job.script), *job.args, *device, *extra]

    def torchtop(self, verb: str, *args: str) -> list[str]:
        return [self.python, "-m", "torchtop", verb, "--rules", str(self.rules), *args]


@dataclass
class StepResult:
    key: str
    status: str = "not run"
    """ok, failed (exit N), timed out, skipped (why), error (why)."""
    started_t: float | None = None
    ended_t: float | None = None
    report: dict[str, Any] | None = None
    figures: dict[str, Any] | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    log: str | None = None
    log_tail: str = ""

    @property
    def seconds(self) -> float | None:
        if self.started_t is None or self.ended_t is None:
            return None
        return self.ended_t - self.started_t


def environment() -> dict[str, str]:
    return {**os.environ, "PYTHONUNBUFFERED": "1"}


def _kill(process: subprocess.Popen[Any]) -> None:
    if process.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
    process.wait()


def timed(result: StepResult, command: list[str], box_s: float, log: Path) -> int | None:
    """Runs `command` with its output in `log`; its exit status, None when the box ran out."""
    log.parent.mkdir(parents=True, exist_ok=True)
    result.log, result.started_t = str(log), time.time()
    with log.open("w") as out:
        out.write("$ " + " ".join(command) + "\n")
        out.flush()
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT,
                                   env=environment(), start_new_session=True)  # fmt: skip
        try:
            code: int | None = process.wait(box_s)
        except subprocess.TimeoutExpired:
            code = None
        _kill(process)
    result.ended_t = time.time()
    text = log.read_text(errors="replace")
    result.log_tail = text[-3000:]
    result.status = (
        "timed out" if code is None else ("ok" if code == 0 else f"failed (exit {code})")
    )
    found = figures(parse_lines(text))
    result.figures = None if found is None else found.__dict__
    if planted := truths(text):
        result.extra["truth"] = planted
    return code


def read_report(path: Path) -> dict[str, Any] | None:
    try:
        loaded = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return loaded if isinstance(loaded, dict) else None


def run_step(kit: Kit, step: Step, seconds: float) -> StepResult:
    """The job under `torchtop run --headless --for`, its report kept."""
    result, folder = StepResult(step.key), kit.work / step.key.replace(":", "-")
    report = folder / "report.json"
    watch = ["--headless", "--for", f"{seconds:g}", "--report", str(report)]
    command = kit.torchtop("run", *watch, "--run-dir", str(folder / "run"), "--")
    command += kit.job_command(step.job)
    timed(result, command, kit.box(seconds + START_MARGIN_S), folder / "log.txt")
    result.report = read_report(report)
    result.extra["run_dir"] = str(folder / "run")
    return result


def bare_step(kit: Kit, step: Step, seconds: float) -> StepResult:
    """The job alone, stopping itself after `seconds`: its own rate, no agent."""
    result, folder = StepResult(step.key), kit.work / step.key.replace(":", "-")
    command = kit.job_command(step.job, "--seconds", f"{seconds:g}")
    timed(result, command, kit.box(seconds + START_MARGIN_S), folder / "log.txt")
    return result


def tune_step(kit: Kit, step: Step, seconds: float) -> StepResult:
    """`torchtop tune --allow precision` on the job, within `seconds` of tuning."""
    result, folder = StepResult(step.key), kit.work / step.key.replace(":", "-")
    report = folder / "report.json"
    command = kit.torchtop("tune", "--allow", "precision", "--for", f"{seconds:g}",
                           "--report", str(report), "--run-dir", str(folder / "run"),
                           "--write", str(folder / "torchtop.toml"),
                           "--", *kit.job_command(step.job))  # fmt: skip
    timed(result, command, kit.box(seconds + 2 * START_MARGIN_S), folder / "log.txt")
    result.report = read_report(report)
    return result
