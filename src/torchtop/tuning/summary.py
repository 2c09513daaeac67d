"""What `tune` reports: the contract's JSON report with its `trials`, and the text summary.

The JSON is the diagnosis of the job as it runs after tuning (`source.kind = "tune"`, the
command as the user gave it), with its `trials` (CONTRACT.md; `Report.trials`, as the
dashboard's accepted fixes are reported), and a `tune` object with the final command, the
environment changes, the overrides and why tuning stopped. The text names each
trial's change and measurement, the code changes left to the user (as patches), and the final
command line and environment.
"""

from __future__ import annotations

import shlex
from pathlib import Path

from msgspec.structs import replace

from torchtop.advice.show import env_changes, format_overrides
from torchtop.model.diff import Document
from torchtop.model.rounds import estimate_claim, outcome_words, predicted_text
from torchtop.model.trials import Trial
from torchtop.report import report_to_json
from torchtop.report.contract import SCHEMA, trials_json
from torchtop.trials.trial import trial_entry
from torchtop.tuning.tune import TuneResult
from torchtop.tuning.tuned import describe_final


def tune_report(result: TuneResult) -> Document:
    trials = tuple(trial_entry(t, with_steps=False) for t in result.trials)
    if result.report is not None:
        report = replace(
            result.report, source_kind="tune", command=result.original.command, trials=trials
        )
        document = report_to_json(report)
    else:
        document = {
            "schema": SCHEMA,
            "source": {"kind": "tune", "paths": [], "command": list(result.original.command)},
            "bottleneck": "unknown",
            "confidence": 0.0,
            "findings": [],
            "trials": [trials_json(t) for t in trials],
        }
    source = document["source"]
    assert isinstance(source, dict)
    source["paths"] = [str(result.run_dir)]
    # The contract leaves out an empty `trials`; tune always says what it tried, even nothing.
    document.setdefault("trials", [])
    document["tune"] = {
        "original_command": list(result.original.command),
        "final_command": list(result.final.command),
        "env_changes": env_changes(result.original.env, result.final.env),
        "overrides": format_overrides(result.final.overrides),
        "baseline_steps_per_s": round(result.baseline.steps_per_s, 4),
        "final_steps_per_s": round(result.final_steps_per_s, 4),
        "stopped_because": result.stopped_because,
        "not_applied": [
            {"knob": s.fix.knob, "reason": s.reason, "patch": s.patch} for s in result.skipped
        ],
    }
    return document


def render_summary(result: TuneResult, written: Path | None) -> str:
    lines = [f"torchtop tune: {shlex.join(result.original.command)}", ""]
    lines.append(f"baseline: {result.baseline.steps_per_s:.2f} steps/s")
    lines += [_trial_line(t) for t in result.trials]
    if result.interrupted is not None:
        changes = "; ".join(result.interrupted.changes) or result.interrupted.description
        number = len(result.trials) + 1
        lines.append(f"trial {number}: {changes}: interrupted before it decided: not kept")
    elif not result.trials:
        lines.append("no fix applied (none was tried)")
    lines.append(f"stopped: {result.stopped_because}")
    patches = [s for s in result.skipped if s.patch]
    if patches:
        lines += ["", "changes only you can make (never applied):"]
        lines += [s.patch.rstrip() for s in patches if s.patch]
    others = [s for s in result.skipped if not s.patch]
    if others:
        lines += ["", "not tried:"]
        lines += [f"  {s.fix.knob}: {s.reason}" for s in others]
    lines += [
        "",
        f"tuned: {result.final_steps_per_s:.2f} steps/s",
        *describe_final(result, written),
    ]
    if written is not None:
        lines.append(f"written to {written}")
    return "\n".join(lines) + "\n"


def _trial_line(trial: Trial) -> str:
    """`trial 1: <change>: 4.10 -> 16.32 steps/s, measured 3.98x (99% interval ...); predicted
    6.25x: faster: kept (<reason>)`: the outcome as the dashboard names it (`outcome_words`),
    the reason saying, for an inconclusive trial, how many rounds favoured the fix and what
    would decide it; a second line where the machine's other load moved under the runs."""
    changes = "; ".join(trial.plan_after.changes) or trial.plan_after.description
    after = trial.trial_steps_per_s
    rates = (
        f"{trial.baseline_steps_per_s:.2f} -> {after:.2f} steps/s, "
        if after is not None
        else f"{trial.baseline_steps_per_s:.2f} steps/s before, "
    )
    measured = rates + estimate_claim(trial.speedup, trial.estimate)
    if trial.predicted_gain is not None:
        measured += f"; {predicted_text(trial.predicted_gain)}"
    verdict = outcome_words(trial.outcome, trial.kept)
    line = f"trial {trial.number}: {changes}: {measured}: {verdict} ({trial.reason})"
    return line + (f"\n  note: {trial.load_change}" if trial.load_change else "")
