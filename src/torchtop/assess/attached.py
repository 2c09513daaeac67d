"""The assessment of a process watched without an agent: shares of py-spy samples for step time.

With no agent inside, the evidence is where the training thread is when sampled (stack dumps,
classified as DataLoader wait, forward, backward, optimizer, collective wait, synchronisation,
other Python or idle) plus NVML's GPU utilisation for the job's processes: shares of samples
stand in for shares of step time, and the same rule tree gives the verdict. A process with an
agent is assessed from its steps as any run is.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import TypeVar

import msgspec
from msgspec.structs import replace

from torchtop.advice.machine import rank_share
from torchtop.advice.resolve import resolve_verdict
from torchtop.analysis.breakdown import CATEGORIES
from torchtop.analysis.stacks import attribute
from torchtop.assess.contention import contention_metrics
from torchtop.assess.context import Context
from torchtop.assess.run import assess
from torchtop.assess.stack_shares import INTERPRETER, StackShares, shares_of
from torchtop.diagnosis.engine import diagnose
from torchtop.diagnosis.frames import OP, FramePatterns
from torchtop.diagnosis.rules import RuleTree
from torchtop.model.analysis import Metrics, RankAnalysis
from torchtop.model.attach import AttachedRank, SamplerCost
from torchtop.model.findings import Verdict
from torchtop.model.report import Report
from torchtop.runs.records import SamplerPace, Settings, ThreadSettings
from torchtop.runs.state import RunState

T = TypeVar("T")

RECENT_DUMPS = 60
RECENT_CHUNKS = 15
_HOST_WORK = ("forward", "backward", "optimizer", "python", "sync")


def stack_metrics(
    state: RunState, patterns: FramePatterns | None, pid: int | None = None
) -> tuple[Metrics, dict[str, float]]:
    """The metrics and breakdown of the job's recent stack records (of one process's samples
    where `pid` is given: native records only); native records are read by `patterns`."""
    dumps = list(state.samples.stacks)[-RECENT_DUMPS:]
    if any(dump.native is True for dump in dumps):
        # A native record is a chunk of samples: the newest chunks are about the last minute.
        if patterns is None:
            raise ValueError("native stack records need the rules' frame patterns")
        chunks = dumps[-RECENT_CHUNKS:]
        found = shares_of(chunks, patterns, pid)
        return native_metrics(found, _gpu_utilization(state), state.launch.cpu_count)
    shares = attribute(dumps)
    counted = len(dumps)
    utilization = _gpu_utilization(state)
    has_gpu = utilization is not None
    dataloader = shares.get("dataloader", 0.0)
    collective = shares.get("collective", 0.0)
    host = sum(shares.get(place, 0.0) for place in _HOST_WORK)
    breakdown = {c: 0.0 for c in CATEGORIES}
    breakdown.update(dataloader=dataloader, communication=collective)
    if has_gpu:
        kernel = max(0.0, min(utilization or 0.0, 1.0 - dataloader - collective))
        breakdown.update(kernel=kernel, cpu_exec=max(0.0, 1.0 - kernel - dataloader - collective))
    else:
        breakdown.update(cpu_exec=host, other=shares.get("idle", 0.0))
    breakdown["other"] = max(0.0, 1.0 - sum(v for k, v in breakdown.items() if k != "other"))
    metrics: Metrics = {f"{c}_share": v for c, v in breakdown.items()}
    metrics.update(
        {
            # No agent times steps here: the figures are of stack samples, never steps.
            "steps_count": None,
            "stack_samples": len(dumps) and counted,
            "has_step_markers": False,
            "has_gpu": has_gpu,
            "gpu_utilization": utilization,
            "memcpy_share": None,  # copies run in C: invisible in Python stacks
            "sync_share": shares.get("sync") if has_gpu else None,
            "host_cpu_count": state.launch.cpu_count,
        }
    )
    return metrics, breakdown


def native_metrics(
    found: StackShares, utilization: float | None, cpu_count: int | None
) -> tuple[Metrics, dict[str, float]]:
    """Metrics from native dumps: copies, collectives and OpenMP waits seen inside libtorch,
    and Python itself (no compiled frame under the line) apart from operators."""
    shares = found.shares
    share = shares.get
    dataloader, collective = share("dataloader", 0.0), share("collective", 0.0)
    copy = share("copy", 0.0)
    breakdown = {c: 0.0 for c in CATEGORIES}
    breakdown.update(dataloader=dataloader, communication=collective, memcpy=copy)
    stalls = dataloader + collective + copy
    if utilization is not None:
        kernel = max(0.0, min(utilization, 1.0 - stalls))
        breakdown.update(kernel=kernel, cpu_exec=max(0.0, 1.0 - kernel - stalls))
    else:
        work = share(OP, 0.0) + share("openmp", 0.0)
        breakdown.update(cpu_exec=work + sum(share(p, 0.0) for p in _HOST_WORK))
    breakdown["other"] = max(0.0, 1.0 - sum(v for k, v in breakdown.items() if k != "other"))
    metrics: Metrics = {f"{c}_share": v for c, v in breakdown.items()}
    metrics.update(
        {
            "steps_count": None,
            "stack_samples": found.samples,
            "has_step_markers": False,
            "has_gpu": utilization is not None,
            "gpu_utilization": utilization,
            "memcpy_share": copy if found.native else None,
            "sync_share": share("sync", 0.0) if utilization is not None else None,
            "openmp_wait_share": share("openmp", 0.0),
            "interpreter_share": share(INTERPRETER, 0.0),
            "torch_num_threads": found.intra_op_threads,
            "host_cpu_count": cpu_count,
        }
    )
    return metrics, breakdown


def _gpu_utilization(state: RunState) -> float | None:
    """Mean utilisation of the GPUs the job's processes use, over recent samples."""
    readings = []
    for record in list(state.samples.gpu)[-RECENT_DUMPS:]:
        used = {p.device_index for p in record.processes}
        for device in record.devices:
            value = device.utilization_gpu_pct
            if device.index in used and value is not None:
                readings.append(value / 100.0)
    return sum(readings) / len(readings) if readings else None


def assess_attached(
    state: RunState,
    windows: Mapping[int, RankAnalysis],
    tree: RuleTree,
    kind: str = "attach",
    local_ranks: int = 1,
    rank: AttachedRank | None = None,
    *,
    context: Context,
) -> Report:
    """The report of a process (or of `local_ranks` ranks pooled) seen through its stacks;
    `rank` is what its environment said when attach started (the first rank's, pooled);
    `context` with the frame patterns (`read_context(frames=True)`)."""
    if state.training_processes:
        return assess(state, windows, tree, kind, context=context)
    metrics, breakdown = stack_metrics(state, context.frames)
    metrics.update(_node_metrics(metrics, local_ranks, rank, context))
    metrics.update(contention_metrics(state.samples.host))
    job = RankAnalysis(
        rank=None,
        label=f"PID {state.launch.pid}",
        infos=(),
        devices=(),
        steps=(),
        breakdown=breakdown,
        metrics=metrics,
        notes=(_evidence_note(metrics), samples_note(metrics), *_native_notes(state)),
    )
    samples = int(metrics.get("stack_samples") or 0)
    # The rules' minimum evidence is counted in samples here: each is one look at the loop.
    verdict = diagnose(tree, {**metrics, "steps_count": samples})
    needed = tree.settings.live_min_steps
    if verdict.bottleneck == "unknown" and verdict.reason == tree.settings.evidence_reason:
        # The rules' reason speaks of saved traces (profile more steps, with more activities);
        # from outside, the samples only say the process was rarely in training work.
        verdict = replace(verdict, reason=idle_reason(metrics, state.launch.pid))
    if samples < needed:
        reason = f"{samples} of the {needed} stack samples needed seen so far"
        if "stacks" in state.unavailable:
            reason = f"no stack samples: {state.unavailable['stacks']}"
        verdict = replace(verdict, bottleneck="unknown", confidence=0.0, reason=reason, findings=())
    verdict = _resolved(verdict, metrics, local_ranks, rank, context)
    return Report(
        source_kind=kind,
        paths=(str(state.layout.root),),
        job=job,
        verdict=verdict,
        command=tuple(state.launch.command) or None,
        pid=state.launch.pid,
        notes=tuple(f"{s} not measured: {r}" for s, r in state.unavailable.items()),
        sampler=sampler_cost(state),
    )


def sampler_cost(state: RunState) -> SamplerCost | None:
    """The newest native chunk of each process in the recent records, summed up."""
    newest: dict[int, SamplerPace] = {}
    for dump in list(state.samples.stacks)[-RECENT_CHUNKS:]:
        for process in dump.processes:
            if not isinstance(process.sampler, msgspec.UnsetType):
                newest[process.pid] = process.sampler
    if not newest:
        return None
    paces = list(newest.values())
    last = paces[-1]
    return SamplerCost(
        processes=len(paces),
        chunk_s=last.chunk_s,
        rate_per_s=last.rate_per_s,
        cpu_share=sum(p.cpu_s / p.chunk_s for p in paces) / len(paces),
        budget_share=last.budget_share,
    )


def idle_reason(metrics: Metrics, pid: int | None) -> str:
    """Why attach names no bottleneck when most samples show no training work."""
    other = metrics.get("other_share")
    seen = f"{other:.0%} of the stack samples" if isinstance(other, float) else "most samples"
    return (
        f"{seen} show PID {pid} outside any operator, DataLoader, copy or collective: it does "
        "not look like a training loop right now (idle, evaluating, or not a PyTorch job); "
        "attach --inject would time its steps"
    )


def _node_metrics(
    metrics: Metrics, local_ranks: int, rank: AttachedRank | None, context: Context
) -> Metrics:
    """The ranks on the node and one rank's share of its cores, as `assess.run` has them."""
    machine = dataclasses.replace(context.machine, local_ranks=local_ranks)
    allowed = _seen(rank.cpus) if rank is not None else None
    return {"local_ranks": local_ranks, "rank_cores": rank_share(machine, allowed).cores}


def _seen(value: T | msgspec.UnsetType | None) -> T | None:
    """A value read of a rank's process when attach started; None where it was not."""
    return None if isinstance(value, msgspec.UnsetType) else value


def _resolved(
    verdict: Verdict,
    metrics: Metrics,
    local_ranks: int,
    rank: AttachedRank | None,
    context: Context,
) -> Verdict:
    """The fixes with their values for this job, from what its stacks and environment say:
    the intra-op threads counted in its native frames, `OMP_NUM_THREADS` as it was started.
    No agent saw its settings, so a value that needs more is dropped, never shown in words."""
    threads = metrics.get("torch_num_threads")
    omp = _seen(rank.omp_num_threads) if rank is not None else None
    cpus = _seen(rank.cpus) if rank is not None else None
    settings = Settings(
        threads=ThreadSettings(
            torch_num_threads=int(threads) if isinstance(threads, int | float) else None,
            omp_num_threads_env=None if omp is None else str(omp),
            usable_cores=cpus,
        ),
        device="cpu" if metrics.get("has_gpu") is False else None,
    )
    machine = dataclasses.replace(context.machine, local_ranks=local_ranks)
    return resolve_verdict(verdict, settings, machine, metrics)


def _evidence_note(metrics: Metrics) -> str:
    said = (
        "no agent in this process: shares are of py-spy samples of the training thread, "
        "not of measured step time"
    )
    if metrics.get("memcpy_share") is None:
        return f"{said}; copies are not visible"
    return f"{said}; copies, collectives and OpenMP waits read from its native (libtorch) frames"


def _native_notes(state: RunState) -> tuple[str, ...]:
    """Why the dumps fell back to Python frames, and the intra-op threads counted natively."""
    notes: list[str] = []
    for dump in list(state.samples.stacks)[-RECENT_DUMPS:]:
        said = dump.python_only
        if isinstance(said, str) and said not in notes:
            notes.append(said)
    return tuple(notes)


def samples_note(metrics: Metrics) -> str:
    """What attach's figures are, said where a reader looks for the step count."""
    samples = int(metrics.get("stack_samples") or 0)
    return (
        f"figures from {samples} stack sample(s), not steps: no step was timed, so the step "
        "count, step times and steps/s are not measured"
    )
