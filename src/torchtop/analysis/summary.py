"""Analyse traces into `RankAnalysis` values: one per rank, plus the job as a whole.

A folder may hold several files of one worker (one per profiled span) and files of several
ranks. Files of one rank are analysed one by one and their steps pooled; the job's metrics are
the ranks' means, with the spread of their step times added to name stragglers. `job_analysis`
is shared by traces (`analyze`) and live runs (`assess.run`), which differ only in its keywords.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

import numpy as np
from msgspec.structs import replace

from torchtop.analysis import comm_overlap, comm_sizes, comms, device, host, name_totals
from torchtop.analysis.breakdown import CATEGORIES, Roles, role_sets, step_costs
from torchtop.analysis.efficiency import pooled as pooled_efficiency
from torchtop.analysis.efficiency import trace_efficiency
from torchtop.analysis.gpu_patterns import gpu_pattern_metrics
from torchtop.analysis.idle import idle_metrics
from torchtop.analysis.memory import memory_metrics, memory_profile, pooled_memory
from torchtop.analysis.modules import module_tree
from torchtop.analysis.step_stats import step_stats
from torchtop.analysis.steps import StepWindows, find_steps, repeated_numbers
from torchtop.analysis.vocabulary import median
from torchtop.model.analysis import Metrics, RankAnalysis, StepCost
from torchtop.traces.data import TraceData
from torchtop.traces.heap import let_go
from torchtop.traces.spill import drop_pages

_WORKER_FILE = re.compile(r"^(?P<worker>.+)\.\d+\.pt\.trace\.json(?:\.gz)?$")


def analyze_trace(trace: TraceData) -> RankAnalysis:
    steps = find_steps(trace)
    _let_go(trace)
    # The operators' self times first, and let go: of everything the analysis makes, these
    # take the most memory (a few arrays as long as the operators), so they are not made
    # while the role sets (about a fifth of the trace's columns) are held; nor are the GPU's
    # and the host's metrics (on a 10.6 GB trace, the role sets held under the GPU metrics'
    # temporaries were the peak).
    self_us = host.self_times(trace.ops)
    top_ops = host.top_ops(trace, self_us)
    _let_go(trace)
    totals = name_totals.name_totals(trace, steps, self_us)
    del self_us
    _let_go(trace)
    # The metrics that need no role set, before the sets are made and held.
    gpu = device.gpu_metrics(trace, steps)
    _let_go(trace)
    idle = idle_metrics(trace, steps)
    sync = host.sync_metrics(trace, steps)
    _let_go(trace)
    cpu = host.cpu_metrics(trace, steps)
    _let_go(trace)
    # Step time is each kept window's span (`step_costs`' total), known before the roles.
    step_mean_us = float(np.mean(steps.end_us - steps.start_us)) if len(steps) else None
    efficiency = trace_efficiency(trace, steps, step_mean_us)
    _let_go(trace)
    roles = role_sets(trace)
    _let_go(trace)
    costs = step_costs(roles, steps)
    _let_go(trace)
    step_list = tuple(
        StepCost(
            number=steps.numbers[i],
            start_us=float(steps.start_us[i]),
            duration_us=float(costs.total_us[i]),
            parts_us={c: float(costs.costs[c][i]) for c in CATEGORIES},
        )
        for i in range(len(steps))
    )
    breakdown = {c: costs.share(c) for c in CATEGORIES}
    total_us = float(costs.total_us.sum())
    metrics: Metrics = {
        "has_step_markers": steps.has_markers,
        "trace_truncated": trace.info.truncated,
        "trace_set_aside_share": trace.info.set_aside_share(),
    }
    metrics.update(gpu)
    metrics.update(idle)
    metrics.update(device.copy_metrics(trace, steps, total_us))
    metrics.update(gpu_pattern_metrics(trace, steps, total_us))
    metrics.update(sync)
    metrics.update(cpu)
    metrics.update(host.parallelism_metrics(trace))
    metrics.update(_comm_overlap(roles, steps.start_us, steps.end_us))
    metrics.update(comm_overlap.overlap_metrics(trace, roles, steps.start_us, steps.end_us))
    communication = comms.collective_stats(
        trace,
        _window(steps.start_us, steps.end_us),
        total_us,
        comm_sizes.host_window(trace, len(steps)) if steps.has_markers else None,
    )
    metrics.update(comms.size_metrics(communication, len(steps)))
    memory = memory_profile(trace, steps)
    metrics.update(memory_metrics(memory))
    return RankAnalysis(
        rank=trace.info.rank,
        label=rank_label(trace),
        infos=(trace.info,),
        devices=tuple(trace.devices),
        steps=step_list,
        breakdown=breakdown,
        metrics=_with_step_metrics(metrics, step_list, breakdown),
        top_kernels=device.top_kernels(trace),
        top_ops=top_ops,
        copies=device.copy_stats(trace),
        notes=_notes(trace, steps),
        python_calls=() if trace.python is None else (trace.python,),
        communication=communication,
        totals=totals,
        memory=memory,
        modules=module_tree(trace, steps),
        efficiency=efficiency,
    )


def _let_go(trace: TraceData) -> None:
    """The freed temporaries' pages given back between the analysis's stages, on a trace
    big enough for them to count (a 10.6 GB trace's stages each left ~100-500 MiB of freed
    heap behind, which the next stage's peak stood on); and the pages of a spilled memory
    track that a stage read."""
    drop_pages(trace.memory)
    let_go(len(trace.ops) + len(trace.kernels) + len(trace.runtime))


def _window(lo: np.ndarray, hi: np.ndarray) -> tuple[float, float] | None:
    return (float(lo.min()), float(hi.max())) if len(lo) else None


def _comm_overlap(roles: Roles, lo: np.ndarray, hi: np.ndarray) -> Metrics:
    """How much of the communication ran while compute (kernels, or CPU ops) was busy."""
    comm = roles.sets["communication"]
    if len(comm) == 0:
        return {"comm_overlap_fraction": None}
    compute = roles.compute_kernels if len(roles.compute_kernels) else roles.sets["cpu_exec"]
    comm_time = float(comm.covered_within(lo, hi).sum())
    overlap = float(comm.intersect(compute).covered_within(lo, hi).sum())
    return {
        "comm_overlap_fraction": overlap / comm_time if comm_time > 0 else None,
        "comm_raw_share": comm_time / float((hi - lo).sum()) if float((hi - lo).sum()) else None,
    }


def _with_step_metrics(
    metrics: Metrics, steps: Sequence[StepCost], breakdown: dict[str, float]
) -> Metrics:
    stats = step_stats(np.array([s.duration_us for s in steps]) / 1000.0)
    result: Metrics = dict(metrics)
    result.update({f"{c}_share": breakdown[c] for c in CATEGORIES})
    # Step statistics come from the steps themselves, never from averaged inputs.
    result.update(
        {
            "steps_count": stats.count,
            "step_mean_ms": stats.mean_ms,
            "step_p50_ms": stats.p50_ms,
            "step_p95_ms": stats.p95_ms,
            "step_cv": stats.cv,
        }
    )
    return result


def _notes(trace: TraceData, steps: StepWindows) -> tuple[str, ...]:
    notes = []
    info = trace.info
    dropped_tail = steps.dropped_tail
    if not steps.has_markers:
        notes.append("no ProfilerStep# markers: the whole trace is treated as one step")
    if dropped_tail:
        notes.append(
            f"dropped the last {dropped_tail} step(s): their device work was not fully captured"
        )
    truncation = info.truncation()
    if truncation is not None:
        notes.append(f"file is {truncation}")
        if trace.devices and not len(trace.kernels):
            notes.append(
                "the trace lists GPUs but none of its GPU events was read (Kineto writes them "
                "after the CPU operators): the figures see the host side only"
            )
    notes.extend(info.set_aside())
    repeated = repeated_numbers(steps.numbers)
    if repeated:
        notes.append(repeated)
    if info.repaired:
        notes.append("repaired invalid JSON (unquoted N/A or NaN, invalid UTF-8)")
    notes.extend(info.notes)
    return tuple(notes)


def rank_label(trace: TraceData) -> str:
    if trace.info.rank is not None:
        return f"rank {trace.info.rank}"
    name = Path(trace.info.path).name
    match = _WORKER_FILE.match(name)
    return match.group("worker") if match else name


def merge_rank(
    parts: Sequence[RankAnalysis], weigh: Literal["time", "steps"] = "time"
) -> RankAnalysis:
    """Pool the steps of several files of one rank; shares and metrics are means weighted by
    each file's step time (`analyze`: the files are one profile cut in pieces), or by its
    number of steps (a run's profiler windows: separate looks at the job, where a look whose
    steps were slow must not outweigh the others by that alone)."""
    if len(parts) == 1:
        return parts[0]
    steps = tuple(s for p in parts for s in p.steps)
    if weigh == "steps":
        weights = [float(len(p.steps)) for p in parts]
        total = sum(weights) or 1.0
        breakdown = {
            c: sum(w * p.breakdown.get(c, 0.0) for p, w in zip(parts, weights, strict=True)) / total
            for c in CATEGORIES
        }
    else:
        total = sum(s.duration_us for s in steps) or 1.0
        breakdown = {c: sum(s.parts_us[c] for s in steps) / total for c in CATEGORIES}
        weights = [sum(s.duration_us for s in p.steps) for p in parts]
    metrics = mean_metrics([p.metrics for p in parts], weights)
    return RankAnalysis(
        rank=parts[0].rank,
        label=parts[0].label,
        infos=tuple(i for p in parts for i in p.infos),
        devices=parts[0].devices,
        steps=steps,
        breakdown=breakdown,
        metrics=_with_step_metrics(metrics, steps, breakdown),
        top_kernels=max(parts, key=lambda p: len(p.steps)).top_kernels,
        top_ops=max(parts, key=lambda p: len(p.steps)).top_ops,
        copies=max(parts, key=lambda p: len(p.steps)).copies,
        notes=tuple(dict.fromkeys(n for p in parts for n in p.notes)),
        python_calls=tuple(c for p in parts for c in p.python_calls),
        communication=comms.pooled([p.communication for p in parts], weights),
        totals=name_totals.pooled([p.totals for p in parts]),
        memory=pooled_memory([d for p in parts for d in p.memory]),
        modules=max(parts, key=lambda p: len(p.steps)).modules,
        efficiency=pooled_efficiency([p.efficiency for p in parts]),
    )


def job_analysis(
    ranks: Sequence[RankAnalysis],
    *,
    steps_count_from: Literal["steps", "metrics"] = "steps",
    shares_measured: bool = True,
    pool_sources: bool = True,
) -> RankAnalysis:
    """The job seen through its ranks (at least one; one rank is the job): the mean breakdown
    and metrics, the spread of step times, and the slowest rank's steps, top lists and name totals.

    `steps_count_from`: the fewest steps of any rank, counted in its step list (traces), or as
    its `steps_count` metric says (live step timing). `shares_measured`: whether the mean
    breakdown is measured, so its shares become the `*_share` metrics; false while a rank's
    breakdown is only step timing, whose unmeasured shares must stay None rather than 0.
    `pool_sources`: the job's trace infos and notes are every rank's (traces: a damaged file of
    any rank must be named), or the slowest rank's (live: the run's notes are reported apart).
    """
    if len(ranks) == 1:
        return ranks[0]
    breakdown = {c: float(np.mean([r.breakdown.get(c, 0.0) for r in ranks])) for c in CATEGORIES}
    metrics = mean_metrics([r.metrics for r in ranks])
    if shares_measured:
        metrics.update({f"{c}_share": v for c, v in breakdown.items()})
    metrics["steps_count"] = min(_steps_count(r, steps_count_from) for r in ranks)
    metrics.update(rank_spread_metrics(ranks))
    slowest = max(ranks, key=lambda r: float(r.metrics.get("step_mean_ms") or 0.0))
    job = replace(
        slowest,
        rank=None,
        label=f"{len(ranks)} ranks",
        breakdown=breakdown,
        metrics=metrics,
        communication=comms.pooled([r.communication for r in ranks], [1.0] * len(ranks)),
        efficiency=pooled_efficiency([r.efficiency for r in ranks]),
    )
    if pool_sources:
        job = replace(
            job,
            infos=tuple(i for r in ranks for i in r.infos),
            notes=tuple(dict.fromkeys(n for r in ranks for n in r.notes)),
            python_calls=tuple(c for r in ranks for c in r.python_calls),
            memory=tuple(d for r in ranks for d in r.memory),
        )
    return job


def _steps_count(rank: RankAnalysis, source: Literal["steps", "metrics"]) -> int:
    if source == "steps":
        return len(rank.steps)
    return int(rank.metrics.get("steps_count") or 0)


def mean_metrics(all_metrics: Sequence[Metrics], weights: Sequence[float] | None = None) -> Metrics:
    """Numbers are (weighted) means over the inputs that measured them; flags are any-of."""
    weights = list(weights) if weights is not None else [1.0] * len(all_metrics)
    keys = dict.fromkeys(k for m in all_metrics for k in m)
    merged: Metrics = {}
    for key in keys:
        values = [(m.get(key), w) for m, w in zip(all_metrics, weights, strict=True)]
        present = [(v, w) for v, w in values if v is not None]
        if not present:
            merged[key] = None
        elif all(isinstance(v, bool) for v, _ in present):
            merged[key] = any(bool(v) for v, _ in present)
        elif all(isinstance(v, int | float) for v, _ in present):
            weight = sum(w for _, w in present) or 1.0
            merged[key] = sum(float(v) * w for v, w in present) / weight
        else:
            merged[key] = present[0][0]
    return merged


def rank_spread_metrics(ranks: Sequence[RankAnalysis]) -> Metrics:
    means = [(r.metrics.get("step_mean_ms"), r) for r in ranks]
    timed = [(float(m), r) for m, r in means if isinstance(m, int | float)]
    if len(timed) < 2:
        return {"ranks_count": len(ranks)}
    values = np.array([m for m, _ in timed])
    slowest = max(timed, key=lambda item: item[0])[1]
    return {
        "ranks_count": len(ranks),
        "rank_step_spread": float((values.max() - values.min()) / median(values)),
        "slowest_rank": slowest.label,
    }
