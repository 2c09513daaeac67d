"""Live assessment: the last steps of each process, plus its latest profiler window, through
the same rules as `analyze`.

Step timing alone measures the step time and the DataLoader wait; a profiler window adds the
full breakdown (kernels, copies, collectives). Until a window exists, what step timing cannot
see is not measured (None), so the rules cannot guess: a job waiting on its DataLoader is named
at once, anything else waits for the first window. Pure functions: the caller reads the run
folder and analyses the windows.

Two spans of steps, on purpose. The step figures shown (`steps_count`, `step_mean_ms`, p50, p95,
`steps_per_s`: in the report, the headless line and the dashboard header) are the whole watched
period's, every step after the warm-up, so a job run to its end is described by all of its
steps and its rate is steps over the time they took. The verdict's inputs (the DataLoader share,
the step-time spread) and the per-step list come from the newest `RECENT_STEPS`, so the verdict
follows a job that changes (an epoch boundary, a drained queue) within seconds; the rate of those
recent steps is kept apart as `recent_steps_per_s` for the dashboard's trend.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from msgspec.structs import replace

from torchtop.advice.locate import dump_stacks
from torchtop.advice.resolve import resolve_verdict
from torchtop.analysis.breakdown import CATEGORIES
from torchtop.analysis.measured_peak import analysis_with_cpu_peak
from torchtop.analysis.step_stats import step_stats
from torchtop.analysis.summary import job_analysis
from torchtop.assess.contention import contention_metrics
from torchtop.assess.context import Context
from torchtop.assess.ending import died_of_memory, ending_note, job_exit
from torchtop.assess.live_memory import live_memory, live_memory_metrics, with_nvml
from torchtop.assess.live_modules import live_module_tree
from torchtop.assess.loader_cpu import loader_cpu_metrics
from torchtop.assess.long_run import long_run, with_long_run_findings, with_places
from torchtop.assess.node_share import ddp_metrics, node_machine, node_metrics
from torchtop.assess.nodes import node_reports
from torchtop.assess.rank_cache import RankCache, RankEntry, evidence_steps, rank_verdict
from torchtop.assess.ranks import standings
from torchtop.assess.restarts import fold_restarts
from torchtop.assess.settings import recorded_settings
from torchtop.assess.straggler_metrics import judged_metrics
from torchtop.assess.window_calls import window_calls
from torchtop.diagnosis.engine import diagnose
from torchtop.diagnosis.rules import RuleTree
from torchtop.model.analysis import Metrics, RankAnalysis, StepCost
from torchtop.model.findings import Verdict
from torchtop.model.report import RankReport, Report
from torchtop.runs.records import LoaderSettings, Settings, ThreadSettings
from torchtop.runs.state import ProcessState, RunState, StepRecord

RECENT_STEPS = 30
WARMUP_STEPS = 2
# Why steps the agent has seen are not counted yet (`step_signal_held`, agent/step_clock.py).
HELD_STEPS = {
    "backward": "backward() calls were seen, but an optimizer exists that has not stepped yet "
    "(they count once it steps, or after 30 s); call torchtop.step() once per step to say",
    "dataloader": "DataLoader batches were seen and count as steps once 8 arrive over 10 s "
    "with no backward() after them; call torchtop.step() once per step to say",
}
STEP_SIGNAL_NOTES = {
    "explicit": "steps marked by torchtop.step() calls",
    "optimizer": "steps marked by optimizer.step() calls",
    "backward": "steps marked by backward() calls (no optimizer step seen)",
    "dataloader": "steps marked by DataLoader batches (no optimizer step or backward() seen)",
}


def period_metrics(process: ProcessState) -> Metrics:
    """The step figures of the whole watched period: every step after the warm-up."""
    walls = process.walls.since(WARMUP_STEPS)
    return wall_metrics(walls)


def wall_metrics(walls_s: np.ndarray) -> Metrics:
    """Count, mean, p50, p95 and the real rate (steps over the summed wall time) of step walls,
    each wall running from the end of the previous step to the end of this one."""
    stats = step_stats(walls_s.astype(np.float64) * 1000)
    if not stats.count:
        return {"steps_count": 0}
    return {
        "steps_count": stats.count,
        "step_mean_ms": stats.mean_ms,
        "step_p50_ms": stats.p50_ms,
        "step_p95_ms": stats.p95_ms,
        "steps_per_s": stats.per_s,
    }


def recent_steps(process: ProcessState) -> list[StepRecord]:
    """The newest steps, without the first few (imports, allocator and cuDNN warm-up)."""
    # From the newest back: a tick reads RECENT_STEPS records, not the whole buffer.
    steps: list[StepRecord] = []
    for step in reversed(process.steps):
        if len(steps) == RECENT_STEPS:
            break
        if step.step >= WARMUP_STEPS:
            steps.append(step)
    return steps[::-1]


def step_metrics(steps: Sequence[StepRecord]) -> Metrics:
    """The recent steps' figures, their spread and, where every wait was timed, the share of
    their time spent waiting on the DataLoader."""
    stats = step_stats(_walls_ms(steps))
    if not stats.count:
        return {"steps_count": 0}
    waits = [s.data_wait_s for s in steps]
    metrics: Metrics = {
        "steps_count": stats.count,
        "step_mean_ms": stats.mean_ms,
        "step_p50_ms": stats.p50_ms,
        "step_p95_ms": stats.p95_ms,
        "step_cv": stats.cv,
        "has_step_markers": True,
    }
    total_s = stats.total_ms / 1000
    if total_s > 0 and all(w is not None for w in waits):
        metrics["dataloader_share"] = min(sum(w for w in waits if w is not None) / total_s, 1.0)
        metrics["loader_cpu_share"] = in_process_cpu_share(steps)
    return metrics


LOADER_CPU_MIN_WAIT_S = 0.005
"""Under this much summed wait the CPU fraction of it is noise (the timers' own cost)."""


def in_process_cpu_share(steps: Sequence[StepRecord]) -> float | None:
    """The fraction of the steps' DataLoader wait that the stepping thread spent on the CPU
    (`data_cpu_s` over `data_wait_s`): with num_workers=0, how much of loading is CPU work;
    None where a step lacks the CPU time or the wait is too short to split."""
    cpus = [s.data_cpu_s for s in steps]
    wait_s = sum(s.data_wait_s or 0.0 for s in steps)
    if wait_s < LOADER_CPU_MIN_WAIT_S or any(c is None for c in cpus):
        return None
    return round(min(sum(c or 0.0 for c in cpus) / wait_s, 1.0), 4)


def _walls_ms(steps: Sequence[StepRecord]) -> np.ndarray:
    return np.array([s.wall_s * 1000 for s in steps], dtype=np.float64)


def settings_metrics(process: ProcessState, cpu_count: int | None) -> Metrics:
    settings = process.settings or Settings()
    loader = settings.dataloader or LoaderSettings()
    threads = settings.threads or ThreadSettings()
    device = settings.device or ""
    return {
        # The job's own affinity where the agent saw it: the cores it may really use.
        "host_cpu_count": threads.usable_cores or cpu_count,
        "torch_num_threads": threads.torch_num_threads,
        "openmp_runtime": threads.openmp_runtime,
        "dataloader_num_workers": loader.num_workers,
        # A job seen stepping without a DataLoader has no worker processes to pin.
        "loader_workers": loader.num_workers
        if settings.dataloader is not None
        else (0 if process.settings is not None and process.steps else None),
        "dataloader_pin_memory": loader.pin_memory,
        "has_gpu": device.startswith("cuda") if device else None,
        "world_size": process.hello.world_size if process.hello is not None else None,
        **ddp_metrics(settings.ddp),
    }


def process_metrics(
    process: ProcessState, window: RankAnalysis | None, cpu_count: int | None
) -> tuple[Metrics, dict[str, float], bool]:
    """Metrics, breakdown, and whether a profiler window backs them."""
    recent = recent_steps(process)
    live = step_metrics(recent)
    live["recent_steps_per_s"] = step_stats(_walls_ms(recent)).per_s
    # The whole period's figures replace the recent ones; the verdict keeps the recent share.
    live.update(period_metrics(process))
    settings = settings_metrics(process, cpu_count)
    if window is not None:
        metrics = dict(window.metrics)
        metrics.update({k: v for k, v in settings.items() if v is not None})
        # Step timing covers many more steps than the window: it wins for step times.
        metrics.update({k: v for k, v in live.items() if k.startswith(("step", "recent"))})
        # Only the agent's clocks split the loader's wait into CPU work and the rest, over
        # the recent steps, whose wait share (unslowed by the profiler) sizes the workers.
        metrics["loader_cpu_share"] = live.get("loader_cpu_share")
        metrics["loader_wait_share"] = live.get("dataloader_share")
        metrics["breakdown_steps"] = len(window.steps)
        return metrics, dict(window.breakdown), True
    metrics = {**settings, **live, "breakdown_steps": len(recent)}
    metrics["loader_wait_share"] = metrics.get("dataloader_share")
    share = metrics.get("dataloader_share")
    breakdown = {c: 0.0 for c in CATEGORIES}
    if isinstance(share, float):
        breakdown["dataloader"] = share
        # What step timing cannot split stays in Other until a profiler window splits it.
        breakdown["other"] = 1.0 - share
    return metrics, breakdown, False


def assess(
    state: RunState,
    windows: Mapping[int, RankAnalysis],
    tree: RuleTree,
    source_kind: str = "run",
    cache: RankCache | None = None,
    refresh_all: bool = False,
    each_window: Mapping[int, Sequence[RankAnalysis]] | None = None,
    *,
    context: Context,
) -> Report:
    """The report for the run as it stands; `windows` maps pid to the analysis of its profiler
    windows pooled (`WindowCache.pooled`), `each_window` to each window alone (to say which
    disagrees). A live view passes its `cache` (each rank redone only when it has new
    records); the final report also passes `refresh_all`, so no rank's figures are from an
    earlier tick. `context`: the machine assessing and its settings (`assess.context`)."""
    cpu_count = state.launch.cpu_count
    processes = state.training_processes
    entries = (cache or RankCache()).analyses(
        processes, windows, tree, cpu_count, analysed_rank, refresh_all
    )
    # A CPU-only job's efficiency is held against the machine's measured peak (the job's).
    ranks = [analysis_with_cpu_peak(entry.analysis, context.cpu_peak) for entry in entries]
    job = _empty_job()
    if ranks:
        # A rank's shares are measured once it has a profiler window (the window's trace info).
        measured = all(r.infos for r in ranks)
        job = job_analysis(
            ranks, steps_count_from="metrics", shares_measured=measured, pool_sources=False
        )
        if len(ranks) > 1:
            # Like steps_count: what every rank's breakdown covers, not a mean of counts.
            covered = min(int(r.metrics.get("breakdown_steps") or 0) for r in ranks)
            job = replace(job, metrics={**job.metrics, "breakdown_steps": covered})
    job = _job_memory(job, ranks, state)
    # The job's figures are its slowest rank's steps; its shares, each rank's window's.
    first = windows.get(processes[0].pid) if processes else None
    node = {**node_metrics(state, job.metrics, context), **contention_metrics(state.samples.host)}
    job = replace(job, metrics={**job.metrics, **node})
    job = replace(job, metrics={**job.metrics, **loader_cpu_metrics(state, job.metrics)})
    # The straggler finding reads the judgement the ranks' standings carry.
    rank_reports = _rank_reports(state, entries, tree, cache)
    judged = judged_metrics([(r.analysis.label, r.standing) for r in rank_reports])
    job = replace(job, metrics={**job.metrics, **judged})
    # Memory growth, periodic stalls and drift: over every step, not the newest windows.
    whole = long_run(state, context)
    job = replace(job, metrics={**job.metrics, **whole.metrics})
    verdict = diagnose(tree, job.metrics, evidence_steps(job, first))
    verdict = with_long_run_findings(verdict, tree, job.metrics)
    verdict = with_places(_resolved(verdict, state, job.metrics, context), whole.places)
    steps = job.metrics.get("steps_count")
    needed = tree.settings.live_min_steps
    if isinstance(steps, int) and steps < needed:
        verdict = replace(
            verdict,
            bottleneck="unknown",
            confidence=0.0,
            reason=_too_few_steps(state, steps, needed, context.no_step_hint_s),
            findings=(),
        )
    calls = window_calls(
        processes,
        each_window or {},
        verdict.bottleneck,
        lambda p, w: diagnose(tree, process_metrics(p, w, cpu_count)[0], w.steps).bottleneck,
        cache.window_classes if cache is not None else {},
    )
    ending = job_exit(state, source_kind)
    return Report(
        source_kind=source_kind,
        paths=(str(state.layout.root),),
        job=job,
        verdict=verdict,
        ranks=rank_reports,
        command=tuple(state.launch.command) or None,
        pid=state.launch.pid,
        notes=_run_notes(state, bool(windows)),
        nodes=node_reports(state),
        windows=calls,
        exit=ending,
        out_of_memory=died_of_memory(ending, job),
        settings=recorded_settings(state),
        timeline=whole.timeline,
    )


def analysed_rank(
    process: ProcessState, window: RankAnalysis | None, cpu_count: int | None
) -> RankAnalysis:
    """One rank's analysis: its step figures, breakdown and notes."""
    metrics, breakdown, from_window = process_metrics(process, window, cpu_count)
    memory = live_memory(process)
    # The agent measured every step; a window's trace, a few: the agent's figures win.
    metrics.update(live_memory_metrics(memory))
    analysis = _rank_analysis(process, metrics, breakdown, window, from_window)
    # Asked for and measured on every step of its period: the agent's tree wins a window's.
    live_tree = live_module_tree(process.module_times) if process.module_times else None
    if live_tree is not None:
        analysis = replace(analysis, modules=live_tree)
    if not memory:
        return analysis
    measured = {d.device for d in memory}
    traced = tuple(d for d in analysis.memory if d.device not in measured)
    return replace(analysis, memory=memory + traced)


def _job_memory(job: RankAnalysis, ranks: list[RankAnalysis], state: RunState) -> RankAnalysis:
    """Every rank's memory (not the slowest rank's alone), NVML's reading beside each CUDA
    entry, and the job's memory metrics over all ranks: the fullest device, the tightest
    prediction."""
    memory = tuple(d for r in ranks for d in r.memory)
    if not memory:
        return job
    pids = {p.rank: p.pid for p in state.training_processes}
    memory = with_nvml(memory, state.samples.gpu, pids)
    metrics = {**job.metrics, **live_memory_metrics(memory)}
    return replace(job, memory=memory, metrics=metrics)


def _rank_reports(
    state: RunState, entries: list[RankEntry], tree: RuleTree, cache: RankCache | None
) -> tuple[RankReport, ...]:
    """Each rank's verdict and standing (straggler, how it ended), when there are several."""
    if len(entries) < 2:
        return ()
    processes = state.training_processes
    node_host = {name: node.samples.host for name, node in state.nodes.items()} or None
    found = standings(
        processes,
        tree.settings.ranks,
        state.samples.host,
        state.exit is not None,
        node_host,
    )
    reports = [
        RankReport(
            e.analysis,
            cache.verdict(e, tree) if cache is not None else rank_verdict(e, tree),
            node=p.node,
            standing=standing,
        )
        for e, p, standing in zip(entries, processes, found, strict=True)
    ]
    folded = fold_restarts(reports, processes)
    return folded if len(folded) > 1 else ()  # one rank, restarted: a job of one process


def _resolved(verdict: Verdict, state: RunState, metrics: Metrics, context: Context) -> Verdict:
    """The fixes with the values they would set on the main process, on this machine."""
    processes = state.training_processes
    if not processes:
        return verdict
    main = processes[0]
    # Only dumps taken once the job steps: one taken while it imports is not its loop.
    started = main.steps[0].t - main.steps[0].wall_s if main.steps else None
    dumps = state.samples.stacks
    stepping = [r for r in dumps if started is not None and r.t >= started]
    stacks = dump_stacks(stepping) if dumps else None
    machine = node_machine(state, context.machine)
    return resolve_verdict(verdict, main.settings, machine, metrics, main.argv, stacks)


def _rank_analysis(
    process: ProcessState,
    metrics: Metrics,
    breakdown: dict[str, float],
    window: RankAnalysis | None,
    from_window: bool,
) -> RankAnalysis:
    profiled = {s.number: s for s in window.steps} if window is not None else {}
    steps = tuple(_step_cost(s, profiled.get(s.step)) for s in recent_steps(process))
    notes = (
        []
        if from_window
        else [
            "breakdown from step timing only: kernels, copies and communication are not measured "
            "until the agent captures a profiler window"
        ]
    )
    step_signal = process.settings.step_signal if process.settings is not None else None
    signal = STEP_SIGNAL_NOTES.get(str(step_signal))
    if signal is not None:
        notes.append(signal)
    return RankAnalysis(
        rank=process.rank,
        label=process.label,
        infos=window.infos if window else (),
        devices=window.devices if window else (),
        steps=steps,
        breakdown=breakdown,
        metrics=metrics,
        top_kernels=window.top_kernels if window else (),
        top_ops=window.top_ops if window else (),
        copies=window.copies if window else (),
        notes=tuple(notes) + tuple(process.notes),
        communication=window.communication if window else (),
        totals=window.totals if window else None,
        memory=window.memory if window else (),
        efficiency=window.efficiency if window else None,
    )


def _step_cost(step: StepRecord, profiled: StepCost | None) -> StepCost:
    """A recent step as measured: its wall time and, where a profiler window covered it, that
    window's split of it (scaled to the wall the agent timed); else its DataLoader wait alone,
    never a window's split lent to a step it did not see."""
    wall_us = step.wall_s * 1e6
    start_us = step.t * 1e6 - wall_us
    if profiled is not None and profiled.duration_us > 0:
        scale = wall_us / profiled.duration_us
        parts = {c: profiled.parts_us.get(c, 0.0) * scale for c in CATEGORIES}
        return StepCost(step.step, start_us, wall_us, parts)
    parts = {} if step.data_wait_s is None else {"dataloader": min(step.data_wait_s * 1e6, wall_us)}
    return StepCost(step.step, start_us, wall_us, parts, profiled=False)


def _too_few_steps(state: RunState, steps: int, needed: int, hint_after_s: float) -> str:
    """Why the verdict waits: too few steps, or, `hint_after_s` after the start, none at all."""
    watched_s = _watched_s(state)
    if state.processes and not state.training_processes and watched_s >= hint_after_s:
        held = {str(p.settings and p.settings.step_signal_held) for p in state.processes.values()}
        if held & set(HELD_STEPS):
            why = HELD_STEPS["backward" if "backward" in held else "dataloader"]
            return f"no training step counted in {watched_s:.0f} s: {why}"
        return (
            f"no training step seen in {watched_s:.0f} s: no optimizer.step(), backward() or "
            "DataLoader iteration was seen; call torchtop.step() once per step"
        )
    return f"{steps} of the {needed} steps needed seen so far"


def _watched_s(state: RunState) -> float:
    """Seconds from the job's start to the newest record of the run (0 when unknown): the
    launcher's samples arrive every second, so this keeps `assess` free of a clock."""
    started = state.run.started_at if state.run is not None else None
    times = state.samples.newest_t()
    times += [p.hello.t for p in state.processes.values() if p.hello is not None]
    times.append(state.exit.ended_at if state.exit is not None else None)
    known = [t for t in times if t is not None]
    if started is None or not known:
        return 0.0
    return max(known) - started


def _empty_job() -> RankAnalysis:
    return RankAnalysis(
        rank=None,
        label="no steps yet",
        infos=(),
        devices=(),
        steps=(),
        breakdown={c: 0.0 for c in CATEGORIES},
        metrics={"steps_count": 0},
    )


def _run_notes(state: RunState, has_window: bool) -> tuple[str, ...]:
    notes = [f"{source} not measured: {reason}" for source, reason in state.unavailable.items()]
    if state.torn_lines:
        notes.append(f"skipped {state.torn_lines} torn or unreadable record line(s)")
    if state.unknown_kinds:
        notes.append(
            f"skipped {state.unknown_kinds} record(s) of a kind this torchtop does not know "
            "(written by a newer version)"
        )
    if state.unknown_fields:
        notes.append(f"ignored {state.unknown_fields} record field(s) this torchtop does not know")
    ending = ending_note(state)
    if ending is not None:
        notes.append(ending)
    if not state.processes:
        notes.append("no agent reported: the job never imported torch, or has not yet")
    return tuple(notes)
