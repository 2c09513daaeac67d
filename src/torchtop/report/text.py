"""The terminal report: verdict first, then the step breakdown as a bar, then findings and fixes.

Readable without colour: each category in the bar has its own letter; colour (when the output
is a terminal and NO_COLOR is unset) only adds emphasis, and severity is also spelt out.
"""

from __future__ import annotations

from collections.abc import Iterable

from torchtop.model.analysis import RankAnalysis
from torchtop.model.findings import Finding, format_value, gain_text
from torchtop.model.report import RankReport, RankStanding, Report
from torchtop.model.rounds import (
    REVERTED_BY_YOU,
    claim_text,
    holding_words,
    outcome_words,
    predicted_text,
)
from torchtop.model.trial_entry import TrialEntry
from torchtop.report import communication
from torchtop.report.contract import breakdown_steps, steps_per_s
from torchtop.report.efficiency import efficiency_text
from torchtop.report.ending import before_first_step, exit_lines, memory_line
from torchtop.report.long_run import timeline_text
from torchtop.report.memory import memory_text, modules_text
from torchtop.report.nodes import node_lines, stack_summary
from torchtop.report.relaunch import relaunch_text
from torchtop.report.straggler_text import no_straggler_line, straggler_words
from torchtop.report.windows import windows_line

BAR_WIDTH = 60
GLYPHS = {
    "kernel": ("K", "32"),
    "memcpy": ("M", "33"),
    "memset": ("S", "33"),
    "communication": ("N", "35"),
    "runtime": ("R", "34"),
    "dataloader": ("D", "31"),
    "cpu_exec": ("C", "36"),
    "other": (".", "90"),
}
_SEVERITY_COLOUR = {"high": "1;31", "medium": "33", "low": "2"}


class _Style:
    def __init__(self, colour: bool) -> None:
        self.colour = colour

    def __call__(self, text: str, code: str) -> str:
        return f"\x1b[{code}m{text}\x1b[0m" if self.colour else text


def render_text(report: Report, colour: bool = False) -> str:
    style = _Style(colour)
    ending = exit_lines(report.exit, style("EXIT", "1;31") + "  ")
    ending[1:1] = memory_line(report.out_of_memory)
    if before_first_step(report):  # nothing else to report: the cause, in the job's words
        return "\n".join([_headline(report), "", *ending])
    lines = [_headline(report), "", *ending]
    if report.attached is not None:  # attach to a launcher or a rank: the job it found
        lines[1:1] = [f"attached: {report.attached.announcement()}"]
    lines += _verdict(report, style)
    lines += _steps(report.job, style)
    lines += timeline_text(report.timeline)
    lines += _findings(report.verdict.findings, style)
    lines += relaunch_text(report)
    if report.ranks:
        lines += _ranks(report)
    if report.nodes:
        lines += ["NODES", *(f"  {line}" for line in node_lines(report.nodes)), ""]
    lines += _tops(report.job)
    lines += efficiency_text(report.job)
    lines += memory_text(report.job)
    lines += modules_text(report.job, report.source_kind)
    if report.trials:
        lines += _trials(report.trials, style)
    notes = list(dict.fromkeys((*report.notes, *report.job.notes)))
    if notes:
        lines += ["", style("NOTES", "1")] + [f"  - {n}" for n in notes]
    return "\n".join(lines) + "\n"


def _headline(report: Report) -> str:
    job = report.job
    if report.source_kind == "trace":
        count = len(report.paths)
        parts = [f"torchtop · {count} trace file{'s' if count != 1 else ''}"]
    else:
        command = " ".join(report.command or ())
        parts = [
            f"torchtop {report.source_kind}" + (f" · {_short(command, 60)}" if command else "")
        ]
    parts.append(job.label)
    numbers = [s.number for s in job.steps]
    timed = job.metrics.get("steps_count")
    if report.source_kind != "trace" and isinstance(timed, int) and timed:
        # Live sources: the whole period's steps, of which `job.steps` lists only the newest.
        parts.append(f"{timed} step{'s' if timed != 1 else ''}")
    elif numbers and job.metrics.get("has_step_markers"):
        span = f"#{numbers[0]}" if len(numbers) == 1 else f"#{numbers[0]}-#{numbers[-1]}"
        parts.append(f"{len(numbers)} step{'s' if len(numbers) != 1 else ''} ({span})")
    elif report.source_kind == "trace":
        parts.append("no step markers: one step")
    if job.devices:
        parts.append(job.devices[0].name)
    return " · ".join(parts)


def _verdict(report: Report, style: _Style) -> list[str]:
    verdict = report.verdict
    colour = "1;32" if verdict.bottleneck != "unknown" else "1;33"
    head = f"VERDICT  {style(verdict.bottleneck.upper(), colour)}"
    if verdict.bottleneck != "unknown":
        head += f"  · confidence {verdict.confidence:.2f}"
    pooled = windows_line(report.windows, verdict.bottleneck)
    note = [f"  {verdict.unexplained}"] if verdict.unexplained else []
    return [head, f"  {verdict.reason}", *note, *([f"  {pooled}"] if pooled else []), ""]


def _steps(job: RankAnalysis, style: _Style) -> list[str]:
    m = job.metrics
    mean = _num(m.get("step_mean_ms"))
    bars = ["  " + _bar(job.breakdown, style), "  " + _legend(job.breakdown, style)]
    if mean is None:
        if sum(job.breakdown.values()) <= 0:
            return [style("STEP", "1") + "  no complete step", ""]
        head = f"{style('STEP', '1')}  step time not measured; shares of sampled time"
        samples = m.get("stack_samples")
        head += f" ({samples} stack samples)" if isinstance(samples, int) else ""
        return [head, *bars, ""]
    head = f"{style('STEP', '1')}  {mean:.1f} ms mean"
    head += (
        f" · p50 {_num(m.get('step_p50_ms')) or 0:.1f} · p95 {_num(m.get('step_p95_ms')) or 0:.1f}"
    )
    rate = steps_per_s(m)
    head += f" · {rate:.2f} steps/s" if rate else ""
    util = _num(m.get("gpu_utilization"))
    head += f" · GPU busy {util:.1%}" if util is not None else " · no GPU in trace"
    return [head, *bars, *_coverage(job), *_communication(job), ""]


def _communication(job: RankAnalysis) -> list[str]:
    """One line of collectives by kind, only where the traces hold any."""
    if not job.communication:
        return []
    parts = [
        f"{s.kind} {s.count}× {s.total_us / 1000.0:.1f} ms"
        + (f" ({s.share:.0%})" if s.share is not None else "")
        for s in job.communication
    ]
    return ["  collectives: " + " · ".join(parts), *communication.text_lines(job)]


def _coverage(job: RankAnalysis) -> list[str]:
    """Which steps the figures and the breakdown cover, when they are not the same steps."""
    count, covered = job.metrics.get("steps_count"), breakdown_steps(job)
    if covered is None or covered == count:
        return []
    source = "profiled steps" if job.infos else "timed steps (the newest)"
    return [f"  step figures over {count} steps; breakdown from {covered} {source}"]


def bar_counts(breakdown: dict[str, float]) -> dict[str, int]:
    """How many of the bar's cells each category gets (also the notebook view's bar)."""
    exact = {c: max(breakdown.get(c, 0.0), 0.0) * BAR_WIDTH for c in GLYPHS}
    counts = {c: int(v) for c, v in exact.items()}
    # Largest remainders get the cells lost to rounding, so the bar is always full width.
    missing = max(BAR_WIDTH - sum(counts.values()), 0)
    for category in sorted(exact, key=lambda c: exact[c] - counts[c], reverse=True)[:missing]:
        counts[category] += 1
    return counts


def _bar(breakdown: dict[str, float], style: _Style) -> str:
    counts = bar_counts(breakdown)
    cells = "".join(
        style((glyph if not style.colour else "█") * counts[c], colour)
        for c, (glyph, colour) in GLYPHS.items()
        if counts[c]
    )
    return f"[{cells}]"


def _legend(breakdown: dict[str, float], style: _Style) -> str:
    ranked = sorted(breakdown.items(), key=lambda item: item[1], reverse=True)
    return "  ".join(
        f"{style(GLYPHS[c][0], GLYPHS[c][1])} {c} {share:.1%}"
        for c, share in ranked
        if share >= 0.0005
    )


def _findings(findings: Iterable[Finding], style: _Style) -> list[str]:
    items = list(findings)
    if not items:
        return [style("FINDINGS", "1") + "  none", ""]
    lines = [style("FINDINGS", "1")]
    for finding in items:
        severity = style(f"{finding.severity:<6}", _SEVERITY_COLOUR[finding.severity])
        lines.append(f"  {severity} {' › '.join(finding.chain)}")
        lines.append(f"         {finding.message}")
        lines.append(f"         {gain_text(finding)}")
        for fix in finding.fixes:
            value = format_value(fix.value)
            lines.append(f"         → {fix.knob} = {value}  [{fix.apply}]  {fix.description}")
            if fix.where is not None:
                at = "" if fix.where.startswith("could not") else "at "
                lines.append(f"           {at}{fix.where}")
    lines.append("")
    return lines


def _ranks(report: Report) -> list[str]:
    lines = ["RANKS"]
    slowest = report.job.metrics.get("slowest_rank")
    if any(r.standing is not None and r.standing.blocks_judged for r in report.ranks):
        # Synchronised ranks share one step time: the straggler judgement points, not the mean.
        slowest = None
    for item in report.ranks:
        a, v = item.analysis, item.verdict
        mean = _num(a.metrics.get("step_mean_ms"))
        mark = "  ← slowest" if a.label == slowest else ""
        node = f"  on {item.node}" if item.node is not None else ""  # a shared run's node
        # Not timed (attach without an agent) is said, never shown as 0 ms.
        step = f"{mean:9.1f} ms" if mean is not None else f"{'not timed':>12}"
        lines.append(
            f"  {a.label:<12} {step}  {v.bottleneck:<13} ({v.confidence:.2f})"
            f"  comm {a.breakdown.get('communication', 0.0):.0%}{mark}{node}"
        )
        if item.restarted_words is not None:
            lines.append(f"               {item.restarted_words}{_kept(item)}")
        lines += standing_lines(item.standing)
    none = no_straggler_line(report.ranks)
    return [*lines, *([f"  {none}"] if none else []), ""]


def _kept(item: RankReport) -> str:
    """What the earlier processes of a restarted rank left in the figures."""
    steps = sum(r.steps_count or 0 for r in item.restarts)
    if steps:
        return f"; its earlier {steps} steps kept in the job's figures"
    return "; its samples kept" if any(r.stack_samples for r in item.restarts) else ""


def standing_lines(standing: RankStanding | None) -> list[str]:
    """Under a recorded rank: whether the others wait on it, and how it ended."""
    if standing is None:
        return []
    lines = []
    if standing.straggler and standing.slower_by is not None:
        lines.append(f"               straggler: {straggler_words(standing)}")
    if standing.ended is not None:
        lines.append(f"               ended: {standing.ended}")
    if standing.last_stack is not None:
        lines.append(f"               last stack: {stack_summary(standing.last_stack)}")
    return lines


def _tops(job: RankAnalysis) -> list[str]:
    lines: list[str] = []
    if job.top_kernels:
        lines.append("TOP KERNELS (share of kernel time)")
        lines += [f"  {k.share:6.1%}  {k.count:6d}x  {_short(k.name)}" for k in job.top_kernels[:5]]
    if job.top_ops:
        lines.append("TOP OPERATORS (share of operator self time)")
        lines += [f"  {o.share:6.1%}  {o.count:6d}x  {_short(o.name)}" for o in job.top_ops[:5]]
    return lines


def _trials(trials: Iterable[TrialEntry], style: _Style) -> list[str]:
    """`1  dataloader.num_workers = 4 [arg]  4.10 -> 16.32 steps/s  measured 3.98x (99% interval
    3.51-4.52x, 4 rounds); predicted 6.25x  faster: kept`, one a line, its reason below (an
    inconclusive trial's says how many rounds favoured the fix and what would decide it)."""
    lines = ["", style("TRIALS", "1")]
    for trial in trials:
        named = ", ".join(f"{f.knob} = {f.value} [{f.apply}]" for f in trial.fixes)
        after = trial.trial_steps_per_s
        before = trial.baseline_steps_per_s
        measured = f"{before:.2f} -> " if before is not None else "not measured -> "
        measured += f"{after:.2f} steps/s" if after else "not measured"
        claim = claim_text(
            trial.speedup, trial.speedup_low, trial.speedup_high, trial.confidence, trial.rounds
        )
        measured += f"  {claim}" if trial.speedup is not None else ""
        predicted = trial.predicted_gain
        measured += f"; {predicted_text(predicted)}" if predicted is not None else ""
        said = outcome_words(trial.outcome or trial.effect, trial.kept)
        outcome = style(said, "1;32") if trial.kept else style(said, "33")
        outcome = style("cancelled", "33") if trial.cancelled else outcome
        lines.append(f"  {trial.number}  {named or 'no fix'}  {measured}  {outcome}")
        if trial.reason:
            lines.append(f"     {trial.reason}")
        if trial.load_change:
            lines.append(f"     note: {trial.load_change}")
        lines += _since_relaunch(trial, style)
    return lines


def _since_relaunch(trial: TrialEntry, style: _Style) -> list[str]:
    """`since relaunch 2.05x (11.6 steps/s over 412 steps): holds`, its reason, the revert."""
    since, claimed = trial.since_relaunch, trial.speedup
    lines = []
    if since is not None:
        rate = since.steps_per_s
        figures = (
            f"{since.speedup or 0:.2f}x ({rate:.2f} steps/s over {since.steps} steps)"
            if rate is not None
            else "no steady-state step"
        )
        said = f"trial said {claimed:.2f}x, " if claimed is not None else ""
        judged = holding_words(since.holds, since.gain_gone)
        judged = style(judged, "1;31") if since.holds is False else judged
        lines.append(f"     {said}since relaunch {figures}: {judged}")
        if since.holds is False and since.reason:
            lines.append(f"     {since.reason}")
    if trial.reverted is not None:
        reverted = trial.reverted
        lines.append(f"     {REVERTED_BY_YOU} at {reverted.at}: {reverted.run_dir}")
    elif since is not None and since.holds is False:
        lines.append("     not reverted: the job ran on with the fix")
    return lines


def _short(name: str, width: int = 90) -> str:
    return name if len(name) <= width else name[: width - 1] + "…"


def _num(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None
