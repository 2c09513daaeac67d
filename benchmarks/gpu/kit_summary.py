"""The kit's results as JSON (`kit-results.json`) and as Markdown (`kit-summary.md`).

The Markdown is what a session pastes into docs/benchmarks.md ("On a GPU"): the machine, every
check with its figure, and each step's outcome with the verdict it gave.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kit_checks import Check, tally
from kit_steps import StepResult

SCHEMA = "torchtop.gpukit/1"
MARK = {True: "pass", False: "**FAIL**", None: "not measured"}


def step_entry(result: StepResult) -> dict[str, Any]:
    report = result.report or {}
    rules = [str(f.get("rule")) for f in report.get("findings") or []]
    return {
        "key": result.key,
        "status": result.status,
        "seconds": result.seconds,
        "bottleneck": report.get("bottleneck"),
        "findings": rules,
        "steps": report.get("steps"),
        "breakdown": report.get("breakdown"),
        "job_figures": result.figures,
        "extra": {k: v for k, v in result.extra.items() if k != "panel"},
        "panel": (result.extra.get("panel") or {}).get("text"),
        "log_tail": result.log_tail if result.status != "ok" else result.log_tail[-600:],
    }


def results_document(
    machine: Mapping[str, Any],
    results: Sequence[StepResult],
    checks: Sequence[Check],
    smi: Mapping[str, Any],
) -> dict[str, Any]:
    return {
        "schema": SCHEMA,
        "machine": dict(machine),
        "tally": tally(checks),
        "checks": [c.as_dict() for c in checks],
        "steps": [step_entry(r) for r in results],
        "nvidia_smi": dict(smi),
    }


def _cell(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def markdown(document: Mapping[str, Any]) -> str:
    machine, counts = document["machine"], document["tally"]
    lines = [
        f"# torchtop GPU kit ({machine.get('mode')}), {machine.get('date')}",
        "",
        f"Machine: {machine.get('device') or 'no GPU'}; driver {machine.get('driver')}; "
        f"torch {machine.get('torch')} (CUDA {machine.get('cuda')}); "
        f"torchtop {machine.get('torchtop')}; Python {machine.get('python')}; "
        f"kit wall time {machine.get('wall_s', 0):.0f} s of a {machine.get('budget_s')} s budget.",
        "",
        f"Checks: {counts['passed']} passed, {counts['failed']} failed, "
        f"{counts['not_measured']} not measured.",
        "",
        "| job | check | result | figure |",
        "|---|---|---|---|",
    ]
    for check in document["checks"]:
        lines.append(
            f"| {check['job']} | {check['name']} | {MARK[check['passed']]} | "
            f"{_cell(check['figure'])} |"
        )
    lines += ["", "| step | status | s | bottleneck | findings | steps/s (report) | job's own |"]
    lines.append("|---|---|---|---|---|---|---|")
    for step in document["steps"]:
        own = (step.get("job_figures") or {}).get("steps_per_s")
        reported = (step.get("steps") or {}).get("steps_per_s")
        seconds = step.get("seconds")
        lines.append(
            f"| {step['key']} | {_cell(step['status'])} | "
            f"{'' if seconds is None else f'{seconds:.0f}'} | {step.get('bottleneck')} | "
            f"{_cell(', '.join(step.get('findings') or []))} | {_rate(reported)} | {_rate(own)} |"
        )
    smi = document.get("nvidia_smi") or {}
    lines += [
        "",
        f"nvidia-smi: {smi.get('readings', 0)} readings; {smi.get('error') or 'no error'}.",
    ]
    return "\n".join(lines) + "\n"


def _rate(value: object) -> str:
    return f"{value:.3f}" if isinstance(value, int | float) else "-"
