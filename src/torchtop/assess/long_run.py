"""The long run's metrics: memory that grows, stalls on a schedule and speed that drifts, over
every step of the run, for the rules (`rules/memory-growth.toml` and its siblings) and the
report's `timeline`.

Read from what the run folder keeps of the whole run (`runs.state`): every step's wall and end
time, each process's memory at its step ends, thinned evenly (`runs.long_series`), and the
main threads' sampled stacks with their times. Memory growth is judged per process and the
fastest is named; stalls, drift and the timeline are the first training process's (rank 0, or
the only one). Pure, like the rest of `assess`: the machine's limits come in the `Context`.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from msgspec.structs import replace

from torchtop.analysis.drift import falling_rate
from torchtop.analysis.stalls import Stalls, periodic_stalls
from torchtop.analysis.timeline import timeline
from torchtop.assess.context import Context
from torchtop.assess.long_run_drift import changed_with
from torchtop.assess.long_run_growth import growth_metrics
from torchtop.assess.long_run_where import cause, place
from torchtop.diagnosis.engine import standing_findings
from torchtop.diagnosis.rules import RuleTree
from torchtop.model.analysis import Metrics
from torchtop.model.findings import Verdict
from torchtop.model.timeline import Timeline
from torchtop.runs.long_series import StackMarks
from torchtop.runs.state import RunState
from torchtop.runs.step_blocks import FIRST_STEP

STALL_CAUSES = ("checkpoint", "evaluation", "dataloader", "logging")


class LongRun(NamedTuple):
    metrics: Metrics
    timeline: Timeline | None
    places: dict[str, str]
    """Where each long-run finding's time goes in the job's code, by metric family (`stall`,
    `rss_growth`, `cuda_growth`): the line its code fixes belong on."""


def long_run(state: RunState, context: Context) -> LongRun:
    processes = state.training_processes
    if not processes:
        return LongRun({}, None, {})
    main = processes[0]
    numbers, walls, ends = main.walls.columns_since(FIRST_STEP)
    stalls = periodic_stalls(numbers, walls)
    spans = stall_spans(stalls, numbers, walls, ends)
    metrics, places = stall_metrics(stalls, spans, state.stack_marks, main.pid)
    metrics.update(drift_metrics(walls, numbers, ends, state, main.pid))
    grown, grown_places = growth_metrics(state, context, spans)
    metrics.update(grown)
    places.update(grown_places)
    stalled = np.isin(numbers, np.array(stalls.steps if stalls else (), dtype=np.int64))
    first = stalled & ~np.concatenate(([False], stalled[:-1]))
    series = main.memory_series
    memory = (series.times, {n: series.values(n) for n in _TIMELINE_SERIES})
    return LongRun(metrics, timeline(ends, walls, first, memory), places)


_TIMELINE_SERIES = ("rss_bytes", "cuda_allocated_bytes", "cuda_reserved_bytes")


def stall_spans(
    stalls: Stalls | None, numbers: np.ndarray, walls: np.ndarray, ends: np.ndarray
) -> list[tuple[float, float]]:
    """Each stalled step's start and end time."""
    if stalls is None:
        return []
    inside = np.isin(numbers, np.array(stalls.steps, dtype=np.int64))
    pairs = zip(ends[inside], walls[inside], strict=True)
    return [(float(e - w), float(e)) for e, w in pairs if not np.isnan(e)]


def stall_metrics(
    stalls: Stalls | None, spans: list[tuple[float, float]], marks: StackMarks, pid: int
) -> tuple[Metrics, dict[str, str]]:
    """The stalls' period, cost and share lost; where they were and what they did."""
    if stalls is None:
        return {"stall_period_steps": None}, {}
    stacks = marks.within(pid, spans)
    where = place(stacks)
    found = cause(stacks)
    metrics: Metrics = {
        "stall_period_steps": stalls.period_steps,
        "stall_period_s": _median_gap(np.array([end for _, end in spans])),
        "stall_count": stalls.count,
        "stall_cost_s": round(stalls.cost_s, 4),
        "stall_share_lost": round(stalls.share_lost, 4),
        "stall_typical_step_s": round(stalls.typical_s, 4),
        "stall_samples": len(stacks),
        "stall_where": where or "no stack sampled during a stall",
        **{f"stall_in_{name}": found == name for name in STALL_CAUSES},
    }
    return metrics, ({"stall": where} if where is not None else {})


def _median_gap(times: np.ndarray) -> float | None:
    known = times[~np.isnan(times)]
    return round(float(np.median(np.diff(known))), 3) if len(known) > 1 else None


def drift_metrics(
    walls: np.ndarray, numbers: np.ndarray, ends: np.ndarray, state: RunState, pid: int
) -> Metrics:
    drift = falling_rate(walls)
    if drift is None:
        return {"drift_fall_share": None}
    first = min(drift.first_slow_bucket * drift.bucket_steps, len(numbers) - 1)
    return {
        "drift_fall_share": round(drift.fall, 4),
        "drift_early_steps_per_s": round(drift.early_per_s, 3),
        "drift_late_steps_per_s": round(drift.late_per_s, 3),
        "drift_since_step": int(numbers[first]),
        "drift_with": changed_with(state, pid, float(ends[first])),
    }


LONG_RUN_RULES = {
    "periodic-stall": "stall",
    "memory-growth": "rss_growth",
    "device-memory-growth": "cuda_growth",
    "memory-fragmentation": "",
    "step-drift": "",
}
"""The long-run rules, and the family of `LongRun.places` their code fixes go on (the line
their stacks found), where one does."""


def with_long_run_findings(verdict: Verdict, tree: RuleTree, metrics: Metrics) -> Verdict:
    """`verdict` with the long-run findings it lacks because it was left unknown (its step
    breakdown too thin for a verdict): they are read over every step, not from the breakdown."""
    if verdict.bottleneck != "unknown":
        return verdict
    found = standing_findings(tree, metrics, tuple(LONG_RUN_RULES))
    return replace(verdict, findings=verdict.findings + found) if found else verdict


def with_places(verdict: Verdict, places: dict[str, str]) -> Verdict:
    """`verdict` with the long-run findings' code fixes placed where their stacks were: the
    stall's line, not the loop's line that every step's samples share."""
    findings = []
    for finding in verdict.findings:
        where = places.get(LONG_RUN_RULES.get(finding.rule) or "")
        if where is not None:
            fixes = tuple(
                replace(fix, where=where) if fix.apply == "code" else fix for fix in finding.fixes
            )
            finding = replace(finding, fixes=fixes)
        findings.append(finding)
    return replace(verdict, findings=tuple(findings))
