"""Does a trial's claimed speedup hold in the long run? Each kept fix against long bare runs.

For each job (the demo, and planted jobs in `benchmarks/jobs/`: sleep-bound input, CPU-bound
Python augmentation in the Dataset, intra-op threads oversubscribing the cores), `tune` runs as
a user would start it (same code path: its baseline, diagnosis and `run_trial` with the default
settings), limited to `--max-trials` trials. For each kept trial the job is then run bare, with
no torchtop and no agent in the process, as the trial's "before" and "after" plans (command and
environment; a fix that only the agent's overrides apply is run with the agent on, without
profiler windows, in both variants alike), each
run `--long-s` seconds, alternating in `--order` (default before, after, before: the mean of the
two befores cancels a steady drift of the machine). A bare run's rate is the job's own: the
steps and times it prints from its own clock (`step N time T s`; the demo prints its cumulative
rate every 50 steps, from which its times follow), over the run after its first tenth (at least
10 s), so start-up and the DataLoader's first queue are left out.

Per kept fix it reports the trial's claimed speedup, its predicted gain, the long-run ratio and
the relative error of the claim (target: within 15%), as a Markdown table for docs/benchmarks.md,
and the whole evidence as JSON with `--json FILE`. `--quick` checks that the script works (one
job, short runs). The full run's estimated time is printed before it starts.

Usage::

    python benchmarks/trial_fidelity.py [--long-s 120] [--order before,after,before]
        [--jobs demo,sleepy-input,python-augment,threads] [--json FILE] [--keep DIR] [--quick]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from torchtop.diagnosis.rules import load_rules
from torchtop.jobs.env import ON_REQUEST
from torchtop.jobs.job import Output, start
from torchtop.model.plan import LaunchPlan
from torchtop.model.trial_entry import entry_json
from torchtop.model.trials import Trial
from torchtop.relaunch.trial import trial_entry
from torchtop.relaunch.tune import TuneOptions, tune

JOBS_DIR = Path(__file__).resolve().parent / "jobs"
TARGET_ERROR = 0.15
TUNE_ESTIMATE_S = 90.0
"""A tune of one trial: a baseline with its profiler window, then three measured runs (42 s for
`sleepy-input` on its own, 80-100 s a job at load 5-9 on the 2-core machine)."""
START_STOP_S = 3.0
SKIP_SHARE, SKIP_MIN_S = 0.1, 10.0

PLANTED = re.compile(r"^step (\d+) time ([0-9.]+) s")
DEMO = re.compile(r"^step (\d+)\s.*?([0-9.]+) steps/s")


@dataclass(frozen=True)
class Job:
    name: str
    command: tuple[str, ...]
    env: dict[str, str] = field(default_factory=dict)
    """Set in the job's environment as the user's shell would have it."""


JOBS = (
    Job("demo", (sys.executable, "-m", "torchtop.demo.train")),
    Job("sleepy-input", (sys.executable, str(JOBS_DIR / "sleepy_input.py"))),
    Job("python-augment", (sys.executable, str(JOBS_DIR / "python_augment.py"))),
    Job("threads", (sys.executable, str(JOBS_DIR / "threads.py")), {"OMP_NUM_THREADS": "8"}),
)


def own_times(stdout: str) -> list[tuple[int, float]]:
    """(step, seconds since the job's start) from what the job printed."""
    points = []
    for line in stdout.splitlines():
        if planted := PLANTED.match(line):
            points.append((int(planted[1]), float(planted[2])))
        elif (demo := DEMO.match(line)) and float(demo[2]) > 0:
            points.append((int(demo[1]), int(demo[1]) / float(demo[2])))
    return points


def own_rate(points: list[tuple[int, float]], skip_s: float) -> float | None:
    """Steps/s between the first printed point past `skip_s` and the last one."""
    kept = [p for p in points if p[1] >= skip_s]
    if len(kept) < 2 or kept[-1][1] <= kept[0][1]:
        return None
    (first_step, first_s), (last_step, last_s) = kept[0], kept[-1]
    return (last_step - first_step) / (last_s - first_s)


def bare_run(
    plan: LaunchPlan, long_s: float, folder: Path, with_agent: bool = False
) -> dict[str, Any]:
    """Run `plan` for `long_s`, stop it, and read its own rate. With no agent, unless
    `with_agent`: a fix that only the agent can apply (an override) is measured with the agent
    on in both variants, with no profiler window, so both pay the same (under 1%) for it."""
    folder.mkdir(parents=True)
    job = start(
        plan.command, folder / "run", "benchmark", env=plan.env, cwd=plan.cwd,
        overrides=plan.overrides, windows=ON_REQUEST,
        output=Output(folder / "stdout.log", folder / "stderr.log"), agent=with_agent,
    )  # fmt: skip
    with contextlib.suppress(subprocess.TimeoutExpired):
        job.process.wait(timeout=long_s)
    job.finish(grace_s=15)
    points = own_times((folder / "stdout.log").read_text())
    rate = own_rate(points, max(SKIP_MIN_S, SKIP_SHARE * long_s))
    return {
        "steps_per_s": rate,
        "printed_points": len(points),
        "folder": str(folder),
        "agent": with_agent,
    }


def long_ratio(trial: Trial, order: list[str], long_s: float, folder: Path) -> dict[str, Any]:
    plans = {"before": trial.plan_before, "after": trial.plan_after}
    with_agent = bool(trial.plan_after.overrides or trial.plan_before.overrides)
    runs = []
    for index, variant in enumerate(order, 1):
        run = bare_run(plans[variant], long_s, folder / f"{index:02d}-{variant}", with_agent)
        runs.append({"variant": variant, **run})
        say(f"  long run {index}/{len(order)} ({variant}): {run['steps_per_s'] or 0:.2f} steps/s")
    rates = {v: [r["steps_per_s"] for r in runs if r["variant"] == v] for v in plans}
    if any(rate is None for values in rates.values() for rate in values):
        return {"runs": runs, "ratio": None}
    ratio = statistics.mean(rates["after"]) / statistics.mean(rates["before"])
    return {"runs": runs, "ratio": ratio}


def one_job(job: Job, args: argparse.Namespace, root: Path) -> list[dict[str, Any]]:
    say(f"{job.name}: tune ({args.max_trials} trial(s) at most)")
    options = TuneOptions(max_trials=args.max_trials, budget_s=args.budget)
    env = {**os.environ, **job.env}
    result = tune(
        job.command, options, load_rules(), root / job.name / "tune", env=env, on_event=_progress
    )
    rows = []
    for trial in result.trials:
        row = _trial_row(job, trial)
        if trial.kept:
            folder = root / job.name / f"long-{trial.number:02d}"
            row.update(long_ratio(trial, args.order, args.long_s, folder))
            if trial.plan_after.overrides != trial.plan_before.overrides:
                row["note"] = "an override: long runs with the agent on (no windows), both variants"
            if row["ratio"] is not None and trial.speedup is not None:
                row["error"] = trial.speedup / row["ratio"] - 1.0
        rows.append(row)
    if not result.trials:
        rows.append({"job": job.name, "fix": None, "note": result.stopped_because})
    return rows


def _trial_row(job: Job, trial: Trial) -> dict[str, Any]:
    return {
        "job": job.name,
        "fix": ", ".join(f"{f.knob}={f.value} ({f.route})" for f in trial.fixes),
        "kept": trial.kept,
        "claimed": trial.speedup,
        "predicted_gain": trial.predicted_gain,
        "trial": entry_json(trial_entry(trial, with_steps=False)),
    }


def table(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| job | fix | kept | predicted | trial claimed | long-run ratio | error |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        kept = "yes" if row.get("kept") else "no"
        lines.append(
            f"| {row['job']} | {row.get('fix') or 'none'} | {kept} | "
            f"{_x(row.get('predicted_gain'))} | {_x(row.get('claimed'))} | "
            f"{_x(row.get('ratio'))} | {_error(row)} |"
        )
    return "\n".join(lines)


def _error(row: dict[str, Any]) -> str:
    error = row.get("error")
    if not isinstance(error, float):
        return str(row.get("note", ""))
    said = f"{error:+.1%}" + ("" if abs(error) <= TARGET_ERROR else " (over 15%)")
    return f"{said}; {row['note']}" if row.get("note") else said


def _x(value: object) -> str:
    return f"{value:.2f}x" if isinstance(value, float) else "-"


def say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _progress(message: str) -> None:
    for line in message.splitlines():
        say(f"    tune: {line}")


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", default=",".join(j.name for j in JOBS))
    parser.add_argument("--long-s", type=float, default=120.0, help="seconds per bare run")
    parser.add_argument("--order", default="before,after,before")
    parser.add_argument("--max-trials", type=int, default=1)
    parser.add_argument("--budget", type=float, default=300.0, help="seconds per tune")
    parser.add_argument("--json", type=Path, help="also write every row's evidence here")
    parser.add_argument("--keep", type=Path, help="keep the runs in this folder")
    parser.add_argument("--quick", action="store_true", help="one job, short runs: a check")
    args = parser.parse_args()
    if args.quick:
        args.jobs, args.long_s, args.order = "sleepy-input", 20.0, "before,after"
    args.order = [v.strip() for v in args.order.split(",")]
    if set(args.order) != {"before", "after"}:
        parser.error(f"--order {','.join(args.order)}: name both `before` and `after`")
    names = {j.name: j for j in JOBS}
    unknown = [n for n in args.jobs.split(",") if n not in names]
    if unknown:
        parser.error(f"--jobs: unknown {', '.join(unknown)} (choose from {', '.join(names)})")
    args.jobs = [names[n] for n in args.jobs.split(",")]
    return args


def main() -> int:
    args = parse_args()
    per_job_s = TUNE_ESTIMATE_S + len(args.order) * (args.long_s + START_STOP_S)
    say(
        f"trial fidelity: {len(args.jobs)} job(s), {len(args.order)} bare runs of "
        f"{args.long_s:g} s each per kept fix: about {len(args.jobs) * per_job_s / 60:.0f} minutes"
    )
    started = time.monotonic()
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="trial-fidelity-") as folder:
        root = args.keep or Path(folder)
        for job in args.jobs:
            rows += one_job(job, args, root)
    markdown = table(rows)
    print(markdown)
    say(f"took {(time.monotonic() - started) / 60:.1f} minutes")
    if args.json:
        document = {"long_s": args.long_s, "order": args.order, "rows": rows}
        args.json.write_text(json.dumps(document, indent=2, default=str) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
