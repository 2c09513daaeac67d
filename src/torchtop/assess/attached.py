"""The assessment of a process watched without an agent: shares of py-spy samples for step time.

With no agent inside, the evidence is where the training thread is when sampled (stack dumps,
classified as DataLoader wait, forward, backward, optimizer, collective wait, synchronisation,
other Python or idle) plus NVML's GPU utilisation for the job's processes: shares of samples
stand in for shares of step time, and the same rule tree gives the verdict. A process with an
agent is assessed from its steps as any run is.
"""

from __future__ import annotations

from collections.abc import Mapping

from msgspec.structs import replace

from torchtop.analysis.breakdown import CATEGORIES
from torchtop.assess.run import assess
from torchtop.collectors.stacks import attribute
from torchtop.diagnosis.engine import diagnose
from torchtop.diagnosis.rules import RuleTree
from torchtop.model.analysis import Metrics, RankAnalysis
from torchtop.model.report import Report
from torchtop.runs.state import RunState

RECENT_DUMPS = 60
_HOST_WORK = ("forward", "backward", "optimizer", "python", "sync")


def stack_metrics(state: RunState) -> tuple[Metrics, dict[str, float]]:
    dumps = list(state.samples.stacks)[-RECENT_DUMPS:]
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
    state: RunState, windows: Mapping[int, RankAnalysis], tree: RuleTree, kind: str = "attach"
) -> Report:
    if state.training_processes:
        return assess(state, windows, tree, kind)
    metrics, breakdown = stack_metrics(state)
    job = RankAnalysis(
        rank=None,
        label=f"PID {state.launch.pid}",
        infos=(),
        devices=(),
        steps=(),
        breakdown=breakdown,
        metrics=metrics,
        notes=(
            "no agent in this process: shares are of py-spy samples of the training thread, "
            "not of measured step time; copies are not visible",
            samples_note(metrics),
        ),
    )
    samples = int(metrics.get("stack_samples") or 0)
    # The rules' minimum evidence is counted in samples here: each is one look at the loop.
    verdict = diagnose(tree, {**metrics, "steps_count": samples})
    needed = tree.settings.live_min_steps
    if samples < needed:
        reason = f"{samples} of the {needed} stack samples needed seen so far"
        if "stacks" in state.unavailable:
            reason = f"no stack samples: {state.unavailable['stacks']}"
        verdict = replace(verdict, bottleneck="unknown", confidence=0.0, reason=reason, findings=())
    return Report(
        source_kind=kind,
        paths=(str(state.layout.root),),
        job=job,
        verdict=verdict,
        command=tuple(state.launch.command) or None,
        pid=state.launch.pid,
        notes=tuple(f"{s} not measured: {r}" for s, r in state.unavailable.items()),
    )


def samples_note(metrics: Metrics) -> str:
    """What attach's figures are, said where a reader looks for the step count."""
    samples = int(metrics.get("stack_samples") or 0)
    return (
        f"figures from {samples} stack sample(s), not steps: no step was timed, so the step "
        "count, step times and steps/s are not measured"
    )
