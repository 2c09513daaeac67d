"""The steps' results turned into the kit's checks (kit_checks.py), job by job.

Reads what the steps left (their reports, the jobs' KIT figures, torchtop's `gpu` samples in
each run folder) and nvidia-smi's readings of the same seconds. Nothing here runs anything.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import kit_checks as checks
from kit_checks import Check
from kit_efficiency import efficiency_checks
from kit_plan import JOBS
from kit_steps import StepResult
from smi import MIB, Reading, window_means

SETTLE_S = 5.0
"""Samples of a job's first seconds (start-up, the first profiler window) are left out."""
JOBS_DIR = Path(__file__).resolve().parent / "jobs"


def nvml_readings(run_dir: Path) -> list[Reading]:
    """torchtop's own NVML samples of device 0 (samples/gpu.jsonl), as smi Readings."""
    readings = []
    path = run_dir / "samples" / "gpu.jsonl"
    lines = path.read_text(errors="replace").splitlines() if path.is_file() else []
    for line in lines:
        try:
            record = json.loads(line)
        except ValueError:
            continue
        devices = [d for d in record.get("devices") or [] if d.get("index") == 0]
        if record.get("kind") != "gpu" or not devices:
            continue
        used = devices[0].get("memory_used_bytes")
        memory = None if used is None else used / MIB
        readings.append(Reading(float(record["t"]), devices[0].get("utilization_gpu_pct"), memory))
    return readings


def sync_line() -> int:
    """The line number of the planted `.item()` in jobs/item_sync.py."""
    lines = (JOBS_DIR / "item_sync.py").read_text().splitlines()
    return next(number for number, text in enumerate(lines, 1) if "# KIT-SYNC" in text)


def nvml_checks(job: str, ours: Sequence[Reading], smi: Sequence[Reading]) -> list[Check]:
    """torchtop's NVML means against nvidia-smi's over the same seconds of the job."""
    if len(ours) < 3:
        return [
            checks._off(n, job, "fewer than 3 NVML samples") for n in ("NVML util", "NVML memory")
        ]
    start_t, end_t = ours[0].t + SETTLE_S, ours[-1].t
    util, memory, count = window_means(ours, start_t, end_t)
    smi_util, smi_memory, smi_count = window_means(smi, start_t, end_t)
    seen = f" [{count} torchtop / {smi_count} nvidia-smi samples over {end_t - start_t:.0f} s]"
    util_limit, memory_limit = checks.UTILIZATION_POINTS, checks.MEMORY_SHARE
    found = [
        checks.within("NVML util", job, util, smi_util, util_limit, relative=False, unit=" pts"),
        checks.within("NVML memory", job, memory, smi_memory, memory_limit, relative=True),
    ]
    return [Check(c.name, c.job, c.passed, c.figure + seen) for c in found]


def run_checks(result: StepResult, smi: Sequence[Reading]) -> list[Check]:
    job = JOBS[result.key.split(":", 1)[1]]
    name, report, own = job.name, result.report, result.figures or {}
    verdict = checks.verdict(name, report, job.bottleneck, job.rule)
    if job.gap and verdict.passed is False:
        verdict = Check(verdict.name, name, False, f"{verdict.figure} ({job.gap})")
    found = [verdict]
    if job.rule is not None:
        found += [checks.fix_offered(name, report, job.rule, knob) for knob in job.fix_knobs]
    if job.name == "item-sync" and job.rule is not None:
        found.append(checks.fix_located(name, report, job.rule, "item_sync.py", sync_line()))
    steps = (report or {}).get("steps") or {}
    found.append(
        checks.within(
            "steps/s",
            name,
            steps.get("steps_per_s"),
            own.get("steps_per_s"),
            checks.RATE_SHARE,
            relative=True,
        )
    )
    found.append(checks.same_steps(name, report, own))
    if job.kernel_truth:
        kernel = ((report or {}).get("breakdown") or {}).get("kernel")
        found.append(
            checks.within(
                "kernel share",
                name,
                kernel,
                own.get("gpu_share"),
                checks.KERNEL_SHARE_POINTS,
                relative=False,
            )
        )
    if "--compile" in job.args:
        found.append(checks.compile_steps(name, report, own.get("steps_per_s")))
    if job.efficiency is not None:
        truth = result.extra.get("truth") or {}
        found += efficiency_checks(job.efficiency, name, report, truth, own.get("steps_per_s"))
    run_dir = Path(result.extra.get("run_dir", "/nonexistent"))
    return found + nvml_checks(name, nvml_readings(run_dir), smi)


def judge(results: Mapping[str, StepResult], smi: Sequence[Reading], dry: bool) -> list[Check]:
    """Every check the steps that ran allow, in the steps' order."""
    found: list[Check] = []
    for key, result in results.items():
        kind, job = key.split(":", 1)
        if result.status.startswith("skipped"):
            continue
        if kind == "run":
            found += run_checks(result, smi)
        elif kind == "bare":
            run = results.get(f"run:{job}")
            rate = (run.figures or {}).get("steps_per_s") if run else None
            found.append(checks.agent_cost(job, (result.figures or {}).get("steps_per_s"), rate))
        elif kind == "tune":
            found.append(
                checks.precision_trial(
                    job, result.report, 1.0 if dry else checks.PRECISION_MIN_SPEEDUP
                )
            )
        elif kind == "attach":
            run = results.get(f"run:{job}")
            found.append(checks.same_class(job, result.report, run.report if run else None))
        elif kind == "dashboard":
            found.append(dashboard_check(job, result.extra.get("panel"), smi))
    return found


def dashboard_check(job: str, panel: Mapping[str, Any] | None, smi: Sequence[Reading]) -> Check:
    if panel is None:
        return checks.panel_shows(job, None, None, None, None)
    t = float(panel["t"])
    util, memory, _ = window_means(smi, t - 3.0, t)
    return checks.panel_shows(job, str(panel["text"]), panel.get("name"), util, memory)
