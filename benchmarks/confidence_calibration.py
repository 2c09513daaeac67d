"""Calibrate confidence on the same planted jobs under `torchtop run` and `torchtop attach`.

Each planted CPU job (its class known) is watched under `run` (the agent inside) and under
`attach` (the job started without torchtop, stack samples only), for each of several watch
lengths. For each job and mode the script prints the verdict and confidence at each length,
and whether the early verdicts matched the outside truth (the planted class, which is also
what the longest `run` names). Then a reliability table: stated confidence, binned, against
how often the verdict was right. Confidence means the chance that much more evidence keeps
the verdict, so in a bin of 0.9-1.0 nine verdicts in ten or more should be right.

Usage: python benchmarks/confidence_calibration.py [--lengths 20,45] [--jobs NAME,...]
       [--keep DIR] [--replay DIR]
An attach's longest watch is also replayed as if stopped after its first 3, 5, 8, ... samples.
Slow (a minute or two a job on two cores): a benchmark, not a test.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path

from torchtop.assess.attached import assess_attached
from torchtop.assess.context import read_context
from torchtop.diagnosis.rules import default_rules_dir, load_rules
from torchtop.runs.state import RunWatcher

ROOT = Path(__file__).resolve().parents[1]
TORCHTOP = [sys.executable, "-m", "torchtop"]
# An attach's samples replayed as if it had stopped after this many: low evidence, same job.
REPLAY_SAMPLES = (3, 5, 8, 12, 20, 30)


@dataclass(frozen=True)
class Job:
    name: str
    argv: tuple[str, ...]
    planted: str
    env: tuple[tuple[str, str], ...] = ()


JOBS = (
    Job("input: demo, 10 ms a batch", ("-m", "torchtop.demo.train", "--latency-ms", "10"),
        "dataloader"),
    Job("input: sleepy storage", (str(ROOT / "tests/workloads/sleepy_input.py"),), "dataloader"),
    Job("compute: MLP math", (str(ROOT / "tests/workloads/threads.py"),), "cpu"),
    # The same storage, faster: a smaller DataLoader share, nearer the 10% boundary.
    Job("input: faster storage", (str(ROOT / "tests/workloads/sleepy_input.py"),
        "--sample-sleep-ms", "0.1"), "dataloader"),
    # One worker loads while the loop computes: the wait is what the worker cannot hide, near
    # the boundary on two busy cores (the truth is the longest run's verdict, not a plant).
    Job("input: one worker", (str(ROOT / "tests/workloads/sleepy_input.py"),
        "--num-workers", "1"), "boundary"),
)  # fmt: skip


@dataclass(frozen=True)
class Seen:
    job: str
    mode: str
    length_s: float
    verdict: str
    confidence: float
    evidence: int | None
    planted: str
    reason: str


def watched(job: Job, mode: str, length_s: float, folder: Path) -> Seen:
    """One watch of `job` under `mode` for `length_s`, its report read back."""
    report_path = folder / f"{mode}-{length_s:g}.json"
    common = ["--headless", "--for", f"{length_s:g}", "--run-dir", str(folder / report_path.stem)]
    common += ["--report", str(report_path)]
    env = {**_environ(), **dict(job.env)}
    if mode == "run":
        command = [*TORCHTOP, "run", *common, "--", sys.executable, *job.argv]
        subprocess.run(command, env=env, capture_output=True, timeout=length_s + 180, check=False)
    else:
        process = subprocess.Popen(
            [sys.executable, *job.argv],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        try:
            # Its first line says it reached its loop: samples of its imports are not its loop.
            assert process.stdout is not None
            process.stdout.readline()
            command = [*TORCHTOP, "attach", str(process.pid), *common]
            subprocess.run(command, capture_output=True, timeout=length_s + 120, check=False)
        finally:
            process.kill()
            process.wait()
    return read_back(job, mode, length_s, report_path)


def read_back(job: Job, mode: str, length_s: float, report_path: Path) -> Seen:
    """What a watch's report says: verdict, confidence and its evidence units."""
    report = json.loads(report_path.read_text()) if report_path.exists() else {}
    steps = report.get("steps", {})
    evidence = steps.get("stack_samples") if mode == "attach" else steps.get("breakdown_steps")
    return Seen(
        job.name,
        mode,
        length_s,
        str(report.get("bottleneck", "no report")),
        float(report.get("confidence", 0.0)),
        evidence,
        job.planted,
        str(report.get("verdict", {}).get("reason", "")),
    )


def replayed(seen: Seen, folder: Path, levels: tuple[int, ...]) -> list[Seen]:
    """An attach's recorded stack records replayed through `assess_attached` as if it had
    stopped after its first k: the confidence at each evidence level, from one watch."""
    state = RunWatcher(folder).poll(final=True)
    dumps = list(state.samples.stacks)
    tree = load_rules(default_rules_dir())
    context = read_context(frames=True)
    found = []
    for k in (k for k in levels if k < len(dumps)):
        state.samples.stacks.clear()
        state.samples.stacks.extend(dumps[:k])
        report = assess_attached(state, {}, tree, context=context)
        verdict, samples = report.verdict, report.job.metrics.get("stack_samples")
        found.append(
            replace(
                seen,
                mode="attach (replay)",
                length_s=seen.length_s * k / len(dumps),
                verdict=verdict.bottleneck,
                confidence=verdict.confidence,
                # A native record is a chunk of several samples: count samples, not records.
                evidence=samples if isinstance(samples, int) else k,
                reason=verdict.reason,
            )
        )
    return found


def _environ() -> dict[str, str]:
    return dict(os.environ)


def reliability(
    seen: list[Seen], edges: tuple[float, ...] = (0.0, 0.6, 0.8, 0.9, 0.95, 1.01)
) -> str:
    """Stated confidence in bins against the share of verdicts that named the job's truth
    (`unknown` verdicts state 0 and are left out: they claim nothing)."""
    lines = ["| stated confidence | verdicts | right | observed agreement | mean stated |",
             "|---|---|---|---|---|"]  # fmt: skip
    named = [s for s in seen if s.verdict not in ("unknown", "no report")]
    truth = truths(seen)
    for low, high in itertools.pairwise(edges):
        inside = [s for s in named if low <= s.confidence < high]
        if not inside:
            continue
        right = sum(s.verdict == truth[s.job] for s in inside)
        mean = sum(s.confidence for s in inside) / len(inside)
        lines.append(
            f"| {low:.2f}-{min(high, 1.0):.2f} | {len(inside)} | {right} | "
            f"{right / len(inside):.2f} | {mean:.2f} |"
        )
    return "\n".join(lines)


def truths(seen: list[Seen]) -> dict[str, str]:
    """Each job's outside truth: its planted class, or where none is planted, what its
    longest `run` names."""
    longest = max(s.length_s for s in seen)
    long_run = {s.job: s.verdict for s in seen if s.mode == "run" and s.length_s == longest}
    return {s.job: long_run.get(s.job, "") if s.planted == "boundary" else s.planted for s in seen}


def table(seen: list[Seen]) -> str:
    """Every watch and replay; `right`: the planted class named; `= long run`: the same verdict
    as the longest `run` of the job."""
    longest = max(s.length_s for s in seen)
    long_run = {s.job: s.verdict for s in seen if s.mode == "run" and s.length_s == longest}
    lines = ["| job | planted | mode | watched s | evidence units | verdict | confidence | right "
             "| = long run |", "|---|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for s in seen:
        units = "" if s.evidence is None else str(s.evidence)
        right = "yes" if s.verdict == truths(seen)[s.job] else "no"
        same = "yes" if s.verdict == long_run.get(s.job) else "no"
        lines.append(
            f"| {s.job} | {s.planted} | {s.mode} | {s.length_s:.0f} | {units} | {s.verdict} | "
            f"{s.confidence:.2f} | {right} | {same} |"
        )
    return "\n".join(lines)


def agreement(seen: list[Seen]) -> str:
    """Per job, at the longest watch: run against attach, when both name the same class."""
    lines = []
    longest = max(s.length_s for s in seen)
    for name in dict.fromkeys(s.job for s in seen):
        pair = {s.mode: s for s in seen if s.job == name and s.length_s == longest}
        if "run" in pair and "attach" in pair:
            r, a = pair["run"], pair["attach"]
            same = r.verdict == a.verdict
            gap = f"{abs(r.confidence - a.confidence):.2f}" if same else "verdicts differ"
            lines.append(f"- {name}: run {r.verdict} {r.confidence:.2f}, attach {a.verdict} "
                         f"{a.confidence:.2f}: {gap}")  # fmt: skip
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lengths", default="20,45", help="watch lengths in seconds")
    parser.add_argument("--jobs", default="", help="names of jobs to run (substrings)")
    parser.add_argument("--modes", default="run,attach")
    parser.add_argument("--keep", default="", help="keep the run folders and reports here")
    parser.add_argument(
        "--replay", default="", help="no jobs: read the reports and folders a --keep run left"
    )
    args = parser.parse_args()
    lengths = [float(x) for x in args.lengths.split(",")]
    wanted = [w for w in args.jobs.split(",") if w]
    jobs = [j for j in JOBS if not wanted or any(w in j.name for w in wanted)]
    seen = kept(Path(args.replay), jobs, lengths) if args.replay else watch_all(args, jobs, lengths)
    print(table(seen), "", reliability(seen), "", agreement(seen), sep="\n")


def kept(folder: Path, jobs: list[Job], lengths: list[float]) -> list[Seen]:
    seen: list[Seen] = []
    for index, job in enumerate(jobs):
        for mode in ("run", "attach"):
            for length_s in lengths:
                report = folder / f"{index}-{mode}" / f"{mode}-{length_s:g}.json"
                seen.append(read_back(job, mode, length_s, report))
                if mode == "attach" and length_s == max(lengths):
                    seen += replayed(seen[-1], report.with_suffix(""), REPLAY_SAMPLES)
    return seen


def watch_all(args: argparse.Namespace, jobs: list[Job], lengths: list[float]) -> list[Seen]:
    seen: list[Seen] = []
    root = Path(args.keep or tempfile.mkdtemp(prefix="torchtop-calibration-"))
    for index, job in enumerate(jobs):
        for mode in args.modes.split(","):
            for length_s in lengths:
                folder = root / f"{index}-{mode}"
                folder.mkdir(parents=True, exist_ok=True)
                seen.append(watched(job, mode, length_s, folder))
                print(seen[-1], file=sys.stderr, flush=True)
                if mode == "attach" and length_s == max(lengths):
                    recorded = folder / f"{mode}-{length_s:g}"
                    seen += replayed(seen[-1], recorded, REPLAY_SAMPLES)
    return seen


if __name__ == "__main__":
    main()
