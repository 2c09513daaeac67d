"""Do trials' claims hold every time? Each job tuned several times, a do-nothing fix trialled.

For each job (the demo, and planted jobs in `tests/workloads/`: sleep-bound input, CPU-bound
Python augmentation in the Dataset, intra-op threads oversubscribing the cores), `tune` runs as
a user would start it (same code path: its baseline, diagnosis and `run_trial` with the default
settings), limited to `--max-trials` trials, `--tunes` times (default 5), one after the other and
alone on the machine; the machine's load average (1 min) is recorded before and after each. For
each kept fix (knob and value; once per job, however many tunes kept it) the job is then run
bare, with no torchtop and no agent in the process, as the trial's "before" and "after" plans
(command and environment; a fix that only the agent's overrides apply is run with the agent on,
without profiler windows, in both variants alike), each run `--long-s` seconds, alternating in
`--order` (default before, after, before: the mean of the two befores cancels a steady drift of
the machine). A bare run's rate is the job's own: the steps and times it prints from its own
clock (`step N time T s`; the demo prints its cumulative rate every 50 steps, from which its
times follow), over the run after its first tenth (at least 10 s), so start-up and the
DataLoader's first queue are left out. Every kept claim is set against that long-run ratio
(target: within 15%).

Then a planted do-nothing fix (`TORCHTOP_BENCH_NOOP=1`, an environment variable the job never
reads, applied as an `env` fix through `run_trial` with tune's default settings: the same code
path as a real fix) is trialled `--noop-trials` times (default 10) on `--noop-job`: it must never
be kept and never be called faster or slower beyond noise.

It prints Markdown tables for docs/benchmarks.md (every tune's claim with its interval and the
load; the do-nothing trials), and the whole evidence as JSON with `--json FILE`. `--quick`
checks that the script works (one job, one tune, two do-nothing trials, three rounds at most,
short runs). The estimated time is printed before it starts.

Usage::

    python benchmarks/trial_fidelity.py [--tunes 5] [--noop-trials 10] [--long-s 120]
        [--order before,after,before] [--jobs demo,sleepy-input,python-augment,threads]
        [--noop-job sleepy-input] [--max-rounds 6] [--json FILE] [--keep DIR] [--quick]
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
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from torchtop.advice.plan import initial_plan
from torchtop.diagnosis.rules import load_rules
from torchtop.jobs.env import ON_REQUEST
from torchtop.jobs.job import Output, start
from torchtop.model.plan import AppliedFix, LaunchPlan
from torchtop.model.rounds import FASTER, SLOWER
from torchtop.model.trial_entry import entry_json
from torchtop.model.trials import Trial
from torchtop.trials.trial import run_trial, trial_entry
from torchtop.tuning.tune import TuneOptions, tune

JOBS_DIR = Path(__file__).resolve().parents[1] / "tests" / "workloads"
TARGET_ERROR = 0.15
RUN_ESTIMATE_S = 15.0
"""One measured run on a quiet machine: start-up, warm-up and at least 5 s measured (10-12 s for
`sleepy-input` alone; 20-23 s at load 11-14 on the 2-core machine, where the estimate is half)."""
START_STOP_S = 3.0
SKIP_SHARE, SKIP_MIN_S = 0.1, 10.0

NOOP = "TORCHTOP_BENCH_NOOP"
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
    """`--tunes` tunes of `job`, then long bare runs once per kept fix, set against each claim."""
    rows: list[dict[str, Any]] = []
    kept: dict[str, Trial] = {}
    for number in range(1, args.tunes + 1):
        load_before = os.getloadavg()[0]
        say(f"{job.name}: tune {number}/{args.tunes} (load {load_before:.1f})")
        options = TuneOptions(
            max_trials=args.max_trials, budget_s=args.budget, max_rounds=args.max_rounds
        )
        env = {**os.environ, **job.env}
        folder = root / job.name / f"tune-{number}"
        result = tune(job.command, options, load_rules(), folder, env=env, on_event=_progress)
        load = {"load_before": load_before, "load_after": os.getloadavg()[0]}
        for trial in result.trials:
            rows.append({**_trial_row(job, trial), "tune": number, **load})
            if trial.kept:
                kept.setdefault(rows[-1]["fix"], trial)
        if not result.trials:
            rows.append({"job": job.name, "tune": number, "fix": None, **load,
                         "note": result.stopped_because})  # fmt: skip
    for index, (fix, trial) in enumerate(kept.items(), 1):
        folder = root / job.name / f"long-{index:02d}"
        long = long_ratio(trial, args.order, args.long_s, folder)
        for row in rows:
            if row.get("fix") == fix and row.get("kept"):
                row.update(long)
                if trial.plan_after.overrides != trial.plan_before.overrides:
                    row["note"] = "an override: long runs with the agent on (no windows)"
                if long["ratio"] is not None and row["claimed"] is not None:
                    row["error"] = row["claimed"] / long["ratio"] - 1.0
    return rows


def _trial_row(job: Job, trial: Trial) -> dict[str, Any]:
    entry = trial_entry(trial, with_steps=False)
    return {
        "job": job.name,
        "fix": ", ".join(f"{f.knob}={f.value} ({f.route})" for f in trial.fixes),
        "kept": trial.kept,
        "effect": trial.effect,
        "claimed": trial.speedup,
        "low": entry.speedup_low,
        "high": entry.speedup_high,
        "rounds": entry.rounds,
        "duration_s": trial.duration_s,
        "predicted_gain": trial.predicted_gain,
        "trial": entry_json(entry),
    }


def noop_trials(job: Job, count: int, root: Path, max_rounds: int) -> list[dict[str, Any]]:
    """`count` trials of a do-nothing env fix on `job`, through `run_trial` as tune runs it."""
    before = initial_plan(job.command, {**os.environ, **job.env}, os.getcwd())
    fix = AppliedFix(f"env.{NOOP}", "1", "env", "a variable the job never reads")
    after = replace(before, env={**before.env, NOOP: "1"}, fixes=(fix,), route="env",
                    description=fix.description, changes=(f"env {NOOP}: unset -> 1",))  # fmt: skip
    options = TuneOptions(max_rounds=max_rounds)
    rows = []
    for number in range(1, count + 1):
        load_before = os.getloadavg()[0]
        say(f"do-nothing trial {number}/{count} on {job.name} (load {load_before:.1f})")
        trial = run_trial(
            before, after, options.steps, options.warmup_steps, root / f"noop-{number:02d}",
            options.run_timeout_s, settings=options.trial_settings(),
            on_event=lambda event: _progress(event.text),
        )  # fmt: skip
        row = {**_trial_row(job, trial), "trial_number": number, "load_before": load_before,
               "load_after": os.getloadavg()[0]}  # fmt: skip
        row["beyond_noise"] = trial.effect in {FASTER, SLOWER}
        rows.append(row)
    return rows


def table(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| job | tune | load | fix | kept | predicted | claimed (interval, rounds) "
        "| long-run ratio | error |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        kept = "yes" if row.get("kept") else "no"
        lines.append(
            f"| {row['job']} | {row.get('tune', '')} | {_load(row)} | {row.get('fix') or 'none'} "
            f"| {kept} | {_x(row.get('predicted_gain'))} | {_claim(row)} "
            f"| {_x(row.get('ratio'))} | {_error(row)} |"
        )
    return "\n".join(lines)


def noop_table(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| trial | load | measured (interval, rounds) | effect | kept | time |",
        "|---|---|---|---|---|---|",
    ]
    for row in rows:
        lines.append(
            f"| {row['trial_number']} | {_load(row)} | {_claim(row)} | {row['effect']} "
            f"| {'yes' if row['kept'] else 'no'} | {row['duration_s']:.0f} s |"
        )
    return "\n".join(lines)


def summary(rows: list[dict[str, Any]], noops: list[dict[str, Any]]) -> str:
    errors = [row["error"] for row in rows if isinstance(row.get("error"), float)]
    within = sum(abs(e) <= TARGET_ERROR for e in errors)
    kept = sum(bool(row["kept"]) for row in noops)
    beyond = sum(bool(row["beyond_noise"]) for row in noops)
    return (
        f"kept claims within {TARGET_ERROR:.0%} of the long runs: {within} of {len(errors)}; "
        f"do-nothing fix: kept in {kept} of {len(noops)} trials, beyond noise in {beyond}"
    )


def _claim(row: dict[str, Any]) -> str:
    claimed, low, high = row.get("claimed"), row.get("low"), row.get("high")
    if not isinstance(claimed, float):
        return "-"
    interval = f"{low:.2f}-{high:.2f}x" if low is not None and high is not None else "none"
    return f"{claimed:.2f}x ({interval}, {row.get('rounds')})"


def _load(row: dict[str, Any]) -> str:
    return f"{row['load_before']:.1f}-{row['load_after']:.1f}"


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
    parser.add_argument("--tunes", type=int, default=5, help="tunes of each job")
    parser.add_argument("--noop-trials", type=int, default=10, help="do-nothing trials")
    parser.add_argument("--noop-job", default="sleepy-input")
    parser.add_argument("--long-s", type=float, default=120.0, help="seconds per bare run")
    parser.add_argument("--order", default="before,after,before")
    parser.add_argument("--max-trials", type=int, default=1)
    parser.add_argument("--max-rounds", type=int, default=TuneOptions().max_rounds)
    parser.add_argument("--budget", type=float, default=300.0, help="seconds per tune")
    parser.add_argument("--json", type=Path, help="also write every row's evidence here")
    parser.add_argument("--keep", type=Path, help="keep the runs in this folder")
    parser.add_argument("--quick", action="store_true", help="one job, short runs: a check")
    args = parser.parse_args()
    if args.quick:
        args.jobs, args.long_s, args.order = "sleepy-input", 20.0, "before,after"
        args.tunes, args.noop_trials, args.max_rounds = 1, 2, 3
    args.order = [v.strip() for v in args.order.split(",")]
    if set(args.order) != {"before", "after"}:
        parser.error(f"--order {','.join(args.order)}: name both `before` and `after`")
    names = {j.name: j for j in JOBS}
    unknown = [n for n in [*args.jobs.split(","), args.noop_job] if n not in names]
    if unknown:
        parser.error(f"unknown job {', '.join(unknown)} (choose from {', '.join(names)})")
    args.jobs = [names[n] for n in args.jobs.split(",")]
    args.noop_job = names[args.noop_job]
    return args


def estimate_s(args: argparse.Namespace) -> float:
    """The worst case: every trial measures all its rounds, every tune keeps a fix."""
    trial_s = 2.0 * args.max_rounds * RUN_ESTIMATE_S
    tune_s = min(float(args.budget), args.max_trials * trial_s + 2 * RUN_ESTIMATE_S)
    long_s = args.max_trials * len(args.order) * (args.long_s + START_STOP_S)
    return float(len(args.jobs) * (args.tunes * tune_s + long_s) + args.noop_trials * trial_s)


def main() -> int:
    args = parse_args()
    say(
        f"trial fidelity: {len(args.jobs)} job(s) tuned {args.tunes} time(s) each, "
        f"{len(args.order)} bare runs of {args.long_s:g} s per kept fix, {args.noop_trials} "
        f"do-nothing trial(s): at most about {estimate_s(args) / 60:.0f} minutes"
    )
    started = time.monotonic()
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="trial-fidelity-") as folder:
        root = args.keep or Path(folder)
        for job in args.jobs:
            rows += one_job(job, args, root)
        noops = noop_trials(args.noop_job, args.noop_trials, root / "noop", args.max_rounds)
    print(table(rows), noop_table(noops), summary(rows, noops), sep="\n\n")
    say(f"took {(time.monotonic() - started) / 60:.1f} minutes")
    if args.json:
        document = {"long_s": args.long_s, "order": args.order, "rows": rows, "noop": noops}
        args.json.write_text(json.dumps(document, indent=2, default=str) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
