"""What `torchtop tune` gains on the demo job: steps/s after tuning over steps/s before.

Each run tunes `python -m torchtop.demo.train` from scratch (its DataLoader waits on simulated
storage, 5 ms per sample, with `--num-workers 0`): baseline, diagnosis, a trial per applicable
fix, kept or reverted. Two speedups are reported per run:

* ``tune``: the final configuration's steps/s (its last kept trial) over the baseline's, as
  tune itself reports them;
* ``A/B``: a fresh A/B trial of the command as given against the tuned one, run right after
  tuning (same steps, same warm-up, one right after the other), which is the fairer number on
  a machine whose load drifts while tune runs.

The medians over ``--runs`` runs are printed last, as a Markdown table for docs/benchmarks.md.

Usage::

    python benchmarks/tune_gain.py [--runs 3] [--max-trials 4] [--budget 300] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from torchtop.diagnosis.rules import load_rules
from torchtop.trials.trial import TrialSettings, run_trial
from torchtop.tuning.tune import TuneOptions, tune

DEMO = [sys.executable, "-m", "torchtop.demo.train"]


def one_run(index: int, options: TuneOptions, root: Path) -> dict[str, Any]:
    started = time.monotonic()
    run_dir = root / f"run-{index}"
    result = tune(DEMO, options, load_rules(), run_dir, on_event=_progress)
    tuned_s = time.monotonic() - started
    confirm = run_trial(
        result.original,
        result.final,
        options.steps,
        options.warmup_steps,
        run_dir / "confirm",
        options.run_timeout_s,
        settings=TrialSettings(min_gain=0.0, max_rounds=1, min_duration_s=options.min_duration_s),
    )
    kept = [f"{f.knob}={f.value} ({f.route})" for t in result.kept for f in t.fixes]
    return {
        "baseline_steps_per_s": result.baseline.steps_per_s,
        "tuned_steps_per_s": result.final_steps_per_s,
        "tune_speedup": result.final_steps_per_s / result.baseline.steps_per_s,
        "ab_before_steps_per_s": confirm.baseline_steps_per_s,
        "ab_after_steps_per_s": confirm.trial_steps_per_s,
        "ab_speedup": confirm.speedup,
        "trials": len(result.trials),
        "kept": kept,
        "reverted": [f"{f.knob}={f.value}" for t in result.trials if not t.kept for f in t.fixes],
        "tune_s": tuned_s,
        "stopped_because": result.stopped_because,
        "final_command": list(result.final.command),
    }


def _progress(message: str) -> None:
    for line in message.splitlines():
        print(f"  tune: {line}", file=sys.stderr, flush=True)


def table(runs: list[dict[str, Any]]) -> str:
    lines = [
        "| run | baseline steps/s | tuned steps/s | tune speedup | A/B before | A/B after | "
        "A/B speedup | trials | kept | tune time (s) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for number, run in enumerate(runs, 1):
        lines.append(
            f"| {number} | {run['baseline_steps_per_s']:.2f} | {run['tuned_steps_per_s']:.2f} | "
            f"{run['tune_speedup']:.2f}x | {run['ab_before_steps_per_s']:.2f} | "
            f"{run['ab_after_steps_per_s']:.2f} | {run['ab_speedup']:.2f}x | {run['trials']} | "
            f"{', '.join(run['kept']) or 'none'} | {run['tune_s']:.0f} |"
        )
    median = statistics.median
    lines.append(
        f"| median | {median(r['baseline_steps_per_s'] for r in runs):.2f} | "
        f"{median(r['tuned_steps_per_s'] for r in runs):.2f} | "
        f"{median(r['tune_speedup'] for r in runs):.2f}x | "
        f"{median(r['ab_before_steps_per_s'] for r in runs):.2f} | "
        f"{median(r['ab_after_steps_per_s'] for r in runs):.2f} | "
        f"{median(r['ab_speedup'] for r in runs):.2f}x | | | "
        f"{median(r['tune_s'] for r in runs):.0f} |"
    )
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--max-trials", type=int, default=4)
    parser.add_argument("--budget", type=float, default=300.0, help="seconds per tune")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--warmup-steps", type=int, default=8)
    parser.add_argument("--min-duration", type=float, default=3.0, help="seconds per baseline")
    parser.add_argument("--json", type=Path, help="also write the runs here")
    args = parser.parse_args()
    options = TuneOptions(
        budget_s=args.budget,
        steps=args.steps,
        warmup_steps=args.warmup_steps,
        min_duration_s=args.min_duration,
        max_trials=args.max_trials,
    )
    runs = []
    with tempfile.TemporaryDirectory(prefix="tune-gain-") as folder:
        for index in range(args.runs):
            print(f"run {index + 1} of {args.runs}", file=sys.stderr, flush=True)
            runs.append(one_run(index, options, Path(folder)))
            print(json.dumps(runs[-1]), flush=True)
    print(f"\nload average at the end: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(table(runs))
    if args.json:
        args.json.write_text(json.dumps(runs, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
