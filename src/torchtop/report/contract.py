"""The JSON report of CONTRACT.md (`torchtop.report/1`), plus fields the contract allows adding."""

from __future__ import annotations

import math
from datetime import UTC, datetime

import msgspec

from torchtop.model.analysis import CopyStat, Metrics, NamedTime, RankAnalysis, StepCost
from torchtop.model.attach import AttachTarget
from torchtop.model.diff import Document
from torchtop.model.findings import Finding, Verdict, gain_text
from torchtop.model.report import (
    JobExit,
    LastStack,
    NodeReport,
    RankStanding,
    Report,
    Restart,
    WindowCall,
)
from torchtop.model.trace import TraceInfo
from torchtop.model.trial_entry import TrialEntry, entry_json
from torchtop.report.communication import messages_json, overlap_json
from torchtop.report.efficiency import efficiency_json
from torchtop.report.long_run import long_run_fields, timeline_json
from torchtop.report.memory import memory_json, modules_json, out_of_memory_json
from torchtop.report.relaunch import relaunch_json
from torchtop.report.settings import settings_json
from torchtop.report.totals import totals_json

SCHEMA = "torchtop.report/1"
BREAKDOWN_KEYS = (
    "kernel", "memcpy", "memset", "communication", "runtime", "dataloader", "cpu_exec", "other",
)  # fmt: skip
TRIAL_KEYS = ("fixes", "baseline_steps_per_s", "trial_steps_per_s", "speedup", "kept")


def report_to_json(report: Report) -> Document:
    job = report.job
    source: dict[str, object] = {"kind": report.source_kind, "paths": list(report.paths)}
    if report.command is not None:
        source["command"] = list(report.command)
    if report.pid is not None:
        source["pid"] = report.pid
    if report.attached is not None:
        source["attached"] = attached_json(report.attached)
    document: dict[str, object] = {
        "schema": SCHEMA,
        "source": source,
        "bottleneck": report.verdict.bottleneck,
        "confidence": report.verdict.confidence,
        "verdict": _verdict_detail(report.verdict),
        "steps": steps_json(job),
        "breakdown": breakdown_json(job),
        "gpu": _gpu_json(job),
        "findings": [finding_json(f) for f in report.verdict.findings],
        "metrics": _clean_metrics(job.metrics),
        "top_kernels": [_named(k) for k in job.top_kernels],
        "top_ops": [_named(o) for o in job.top_ops],
        "copies": [_copy(c) for c in job.copies],
        "traces": [_trace_info(i) for i in job.infos],
        "notes": list(dict.fromkeys((*report.notes, *job.notes))),
    }
    if job.communication:
        document["communication"] = communication_json(job)
    if job.totals is not None:
        document["totals"] = totals_json(job.totals)
    if job.memory:
        document["memory"] = memory_json(job.memory)
    if job.modules is not None:
        document["modules"] = modules_json(job.modules)
    if job.efficiency is not None:
        document["efficiency"] = efficiency_json(job.efficiency)
    if report.ranks:
        document["ranks"] = [
            {
                "rank": r.analysis.rank,
                "label": r.analysis.label,
                "steps": steps_json(r.analysis),
                "bottleneck": r.verdict.bottleneck,
                "confidence": r.verdict.confidence,
                "breakdown": breakdown_json(r.analysis),
                **standing_json(r.standing),
            }
            | ({"node": r.node} if r.node is not None else {})
            | ({"pid": r.pid} if r.pid is not None else {})
            | ({"restarts": [restart_json(e) for e in r.restarts]} if r.restarts else {})
            | (
                {"communication": communication_json(r.analysis)}
                if r.analysis.communication
                else {}
            )
            | overlap_json(r.analysis)
            | (
                {"efficiency": efficiency_json(r.analysis.efficiency)}
                if r.analysis.efficiency is not None
                else {}
            )
            for r in report.ranks
        ]
    if report.trials:
        document["trials"] = [trials_json(t) for t in report.trials]
    if report.windows:
        document["windows"] = [window_json(w) for w in report.windows]
    if report.nodes:
        document["nodes"] = [node_json(node) for node in report.nodes]
        document.update(relaunch_json(report))
    if report.exit is not None:
        document["exit"] = exit_json(report.exit)
    if report.out_of_memory is not None:
        document["out_of_memory"] = out_of_memory_json(report.out_of_memory)
    if report.settings is not None:
        document["settings"] = settings_json(report.settings)
    if report.timeline is not None:
        document["timeline"] = timeline_json(report.timeline)
    return document


def window_json(call: WindowCall) -> dict[str, object]:
    """One profiler window the verdict pooled: the steps it covered (first and last), what it
    alone said, and whether that is the run's verdict (null while the run has none)."""
    return {
        "rank": call.rank,
        "steps": [call.first_step, call.last_step],
        "bottleneck": call.bottleneck,
        "agrees": call.agrees,
    }


def exit_json(ending: JobExit) -> dict[str, object]:
    """The report's `exit`: how the job ended (`status`, or the `signal` that ended it, with
    `how` in a word), the last lines it wrote to stderr, the file with its whole output, and
    `rank`: the rank that failed first, how, and its own error (null for one process)."""
    return {
        "how": ending.how,
        "status": ending.status,
        "signal": ending.signal,
        "stderr_tail": list(ending.stderr_tail),
        "log": ending.log,
        # A job of several ranks: the first to fail, with its own error (what it printed).
        "rank": None
        if ending.rank is None
        else {"rank": ending.rank, "ended": ending.rank_ended, "error": list(ending.rank_error)},
    }


def attached_json(target: AttachTarget) -> dict[str, object]:
    """`source.attached`: the pid given, what it is, the job's launcher and its ranks."""
    document = msgspec.to_builtins(target)
    assert isinstance(document, dict)
    return {**document, "job": target.job_words}


def node_json(node: NodeReport) -> dict[str, object]:
    """One `nodes` entry: its name, its ranks, its counters' summary and how its job ended;
    followed through a stream, whether it answers and when it last did."""
    entry: dict[str, object] = {
        "name": node.name,
        "ranks": list(node.ranks),
        "host": node.host,
        "cpu_mean_pct": _round(node.cpu_mean_pct, 2),
        "mem_used_bytes": node.mem_used_bytes,
        "gpu_mean_utilization_pct": _round(node.gpu_mean_utilization_pct, 2),
        "ended": node.ended,
    }
    if node.answering is not None:  # followed through its `--serve` stream
        entry["answering"] = node.answering
        entry["last_seen"] = _iso(node.last_seen_epoch_s)
    return entry


def _iso(epoch_s: float | None) -> str | None:
    if epoch_s is None:
        return None
    return datetime.fromtimestamp(epoch_s, UTC).isoformat(timespec="seconds")


def communication_json(analysis: RankAnalysis) -> dict[str, object]:
    """Collectives by kind (only where the traces hold any): count, time, share, bytes, and
    the message sizes and bandwidth (null where the trace has no sizes)."""
    return {
        s.kind: {
            "count": s.count,
            "total_ms": round(s.total_us / 1000.0, 3),
            "share": _round(s.share, 4),
            "bytes": s.bytes,
            "messages": None if s.sizes is None else messages_json(s.sizes),
            "algbw_gbps": None if s.sizes is None else s.sizes.algbw_gbps,
            "busbw_gbps": None if s.sizes is None else s.sizes.busbw_gbps,
        }
        for s in analysis.communication
    }


def standing_json(standing: RankStanding | None) -> dict[str, object]:
    """A recorded rank's `straggler`, `slower_by`, `since` and `ended` (none for a trace)."""
    if standing is None:
        return {}
    since = None
    if standing.since_step is not None:
        since = {"step": standing.since_step, "t": standing.since_t}
    document: dict[str, object] = {
        "straggler": standing.straggler,
        "slower_by": standing.slower_by,
        "culprit_share": standing.culprit_share,
        "since": since,
        "ended": standing.ended,
        # Over all the counted steps the ranks share, in blocks (`assess.stragglers`).
        "waited_share": standing.waited_share,
        "chance": standing.chance,
        "blocks": standing.blocks_judged,
        "judged_steps": list(standing.judged_steps) if standing.judged_steps else None,
    }
    if standing.last_stack is not None:
        document["last_stack"] = last_stack_json(standing.last_stack)
    return document


def restart_json(restart: Restart) -> dict[str, object]:
    """A restarted rank's earlier process: `{"pid", "until": ISO time its next process
    started, "stack_samples": its main thread's samples (attach), "steps": the steps its agent
    timed (run)}`, null where not measured."""
    until = datetime.fromtimestamp(restart.until_t, UTC).isoformat(timespec="seconds")
    return {
        "pid": restart.pid,
        "until": until,
        "stack_samples": restart.stack_samples,
        "steps": restart.steps_count,
    }


def last_stack_json(stack: LastStack) -> dict[str, object]:
    """`{"at": ISO time, "frames": [{function, file, line}, ...]}`, innermost frame first."""
    at = datetime.fromtimestamp(stack.t, UTC).isoformat(timespec="milliseconds")
    frames = [{"function": f.function, "file": f.file, "line": f.line} for f in stack.frames]
    return {"at": at, "frames": frames}


def trials_json(trial: TrialEntry) -> dict[str, object]:
    """One `trials` entry: the contract's five keys first, then the trial's own evidence."""
    entry = entry_json(trial)
    head = {key: entry[key] for key in TRIAL_KEYS}
    return {**head, **{k: v for k, v in entry.items() if k not in head}}


def steps_json(analysis: RankAnalysis) -> dict[str, object]:
    """The contract's step figures, then what the breakdown covers and the per-step list.

    `count` is null where no step was timed (attach without an agent counts stack samples,
    given apart as `stack_samples`); `breakdown_steps` is how many steps the breakdown covers
    (a profiler window's, or the recent steps' timing)."""
    metrics = analysis.metrics
    count = metrics.get("steps_count")
    head: dict[str, object] = {
        "count": int(count) if isinstance(count, int | float) else None,
        "mean_ms": _round(_number(metrics.get("step_mean_ms")), 3),
        "p50_ms": _round(_number(metrics.get("step_p50_ms")), 3),
        "p95_ms": _round(_number(metrics.get("step_p95_ms")), 3),
        "steps_per_s": _round(steps_per_s(metrics), 3),
        "has_markers": bool(metrics.get("has_step_markers")),
        "breakdown_steps": breakdown_steps(analysis),
    }
    samples = metrics.get("stack_samples")
    if isinstance(samples, int):
        head["stack_samples"] = samples
    return {
        **head,
        "per_step": [_step_json(s) for s in analysis.steps],
    }


def _step_json(step: StepCost) -> dict[str, object]:
    """One step: its time, and the shares of it that were measured (`profiled`: a profiler
    window split all of it; else only its DataLoader wait, which the agent times every step)."""
    return {
        "step": step.number,
        "duration_ms": round(step.duration_us / 1000.0, 3),
        "breakdown": {
            k: round(v / step.duration_us, 4) if step.duration_us else 0.0
            for k, v in step.parts_us.items()
        },
        "profiled": step.profiled,
    }


def steps_per_s(metrics: Metrics) -> float | None:
    """The measured rate (steps over the time they took) where the source gives one; for a
    trace's steps it equals 1000 / mean, the same count over the same summed time."""
    rate = _number(metrics.get("steps_per_s"))
    if rate is not None:
        return rate
    mean_ms = _number(metrics.get("step_mean_ms"))
    return 1000.0 / mean_ms if mean_ms else None


def breakdown_steps(analysis: RankAnalysis) -> int | None:
    """How many steps the breakdown was measured over: a trace's are all its steps."""
    covered = analysis.metrics.get("breakdown_steps")
    if isinstance(covered, int | float) and not isinstance(covered, bool):
        return int(covered)
    count = analysis.metrics.get("steps_count")
    return len(analysis.steps) if isinstance(count, int) and analysis.steps else None


def breakdown_json(analysis: RankAnalysis) -> dict[str, float]:
    return {key: round(float(analysis.breakdown.get(key, 0.0)), 4) for key in BREAKDOWN_KEYS}


def finding_json(finding: Finding) -> dict[str, object]:
    return {
        "rule": finding.rule,
        "class": finding.bottleneck_class,
        "severity": finding.severity,
        "title": finding.title,
        "message": finding.message,
        "chain": list(finding.chain),
        "evidence": _clean_metrics(finding.evidence),
        "why": finding.why,
        "fixes": [
            {"knob": f.knob, "value": f.value, "apply": f.apply, "description": f.description}
            | ({"where": f.where} if f.where is not None else {})
            | ({"predicted_gain": f.predicted_gain} if f.predicted_gain is not None else {})
            for f in finding.fixes
        ],
        "predicted_gain": finding.predicted_gain,
        "recoverable_share": finding.recoverable_share,
        "gain_text": gain_text(finding),
        **long_run_fields(finding),
    }


def _verdict_detail(verdict: Verdict) -> dict[str, object]:
    return {
        "reason": verdict.reason,
        "scores": {k: round(v, 4) for k, v in verdict.scores.items()},
        "recoverable": {k: _round(v, 4) for k, v in verdict.recoverable.items()},
        "predicted_gain": verdict.predicted_gain,
        "work_class": verdict.work,
        "unexplained_share": verdict.unexplained_share,
        "unexplained": verdict.unexplained,
    }


def _gpu_json(analysis: RankAnalysis) -> dict[str, object]:
    utilization = _number(analysis.metrics.get("gpu_utilization"))
    return {
        "utilization": _round(utilization, 4),
        "devices": [
            {
                "index": d.index,
                "name": d.name,
                "total_memory_bytes": d.total_memory_bytes,
                "compute_capability": None
                if d.compute_major is None
                else f"{d.compute_major}.{d.compute_minor or 0}",
            }
            for d in analysis.devices
        ],
    }


def _named(item: NamedTime) -> dict[str, object]:
    data: dict[str, object] = {
        "name": item.name,
        "count": item.count,
        "total_us": round(item.total_us, 3),
        "share": round(item.share, 4),
    }
    if item.tensor_cores is not None:
        data["tensor_cores"] = item.tensor_cores
    return data


def _copy(item: CopyStat) -> dict[str, object]:
    return {
        "kind": item.kind,
        "pageable": item.pageable,
        "count": item.count,
        "bytes": item.bytes,
        "total_us": round(item.total_us, 3),
        "gb_per_s": _round(item.gb_per_s, 3),
    }


def _trace_info(info: TraceInfo) -> dict[str, object]:
    entry: dict[str, object] = {
        "path": info.path,
        "rank": info.rank,
        "events": info.events_total,
        "truncated": info.truncated,
        "lost_bytes": info.lost_bytes,
        "dropped_corrupt": info.dropped_corrupt,
        "dropped_malformed": info.dropped_malformed,
        "dropped_duplicate": info.dropped_duplicate,
        "malformed_fields": dict(info.malformed_fields),
    }
    if info.truncated:  # what was read of a cut file (docs/report.md)
        entry.update(
            file_bytes=info.file_bytes,
            json_bytes=info.json_bytes,
            gzip_cut=info.gzip_cut,
            last_event_s=_round(info.last_event_s, 6),
            truncation=info.truncation(),
        )
    return entry


def _clean_metrics(metrics: Metrics) -> dict[str, object]:
    return {k: (_round(v, 6) if isinstance(v, float) else v) for k, v in metrics.items()}


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _round(value: float | None, digits: int) -> float | None:
    if value is None or math.isnan(value) or math.isinf(value):
        return None
    return round(value, digits)
