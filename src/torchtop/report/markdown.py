"""The report as Markdown, for issues, pull requests and notebooks."""

from __future__ import annotations

from torchtop.model.findings import gain_text
from torchtop.model.report import Report
from torchtop.report.contract import BREAKDOWN_KEYS, breakdown_steps, steps_per_s
from torchtop.report.efficiency import efficiency_markdown
from torchtop.report.memory import memory_markdown, modules_markdown
from torchtop.report.nodes import node_fields
from torchtop.report.relaunch import relaunch_markdown
from torchtop.report.text import standing_lines
from torchtop.report.windows import windows_line


def render_markdown(report: Report) -> str:
    job, verdict = report.job, report.verdict
    lines = [f"# torchtop report: {job.label}", ""]
    verdict_line = f"**Bottleneck: `{verdict.bottleneck}`**"
    if verdict.bottleneck != "unknown":
        verdict_line += f" (confidence {verdict.confidence:.2f})"
    lines += [verdict_line + f" — {verdict.reason}", ""]
    pooled = windows_line(report.windows, verdict.bottleneck)
    if pooled:
        lines += [pooled[0].upper() + pooled[1:] + ".", ""]
    if verdict.unexplained:
        lines += [verdict.unexplained, ""]
    mean = job.metrics.get("step_mean_ms")
    if isinstance(mean, int | float):
        line = f"Mean step {mean:.1f} ms over {job.metrics.get('steps_count')} steps"
        rate = steps_per_s(job.metrics)
        line += f", {rate:.2f} steps/s" if rate else ""
        covered = breakdown_steps(job)
        line += f"; breakdown from {covered} steps." if covered is not None else "."
        lines += [line, ""]
    elif isinstance(job.metrics.get("stack_samples"), int):
        lines += [f"No step timed: shares of {job.metrics['stack_samples']} stack samples.", ""]
    lines += ["| category | share of step |", "|---|---:|"]
    lines += [f"| {k} | {job.breakdown.get(k, 0.0):.2%} |" for k in BREAKDOWN_KEYS]
    lines.append("")
    if verdict.findings:
        lines += ["## Findings", ""]
        for f in verdict.findings:
            lines.append(
                f"- **{f.severity}** `{' > '.join(f.chain)}`: {f.message} ({gain_text(f)})"
            )
            lines += [
                f"  - fix `{x.knob} = {x.value}` ({x.apply}): {x.description}" for x in f.fixes
            ]
        lines.append("")
    lines += relaunch_markdown(report)
    if report.ranks:
        # The node column only for a run several nodes shared: other tables stay as they were.
        nodes = any(r.node is not None for r in report.ranks)
        lines += [
            "## Ranks",
            "",
            "| rank | mean step (ms) | bottleneck | communication |" + (" node |" if nodes else ""),
            "|---|---:|---|---:|" + ("---|" if nodes else ""),
        ]
        for r in report.ranks:
            step = r.analysis.metrics.get("step_mean_ms")
            step_text = f"{step:.1f}" if isinstance(step, int | float) else "n/a"
            lines.append(
                f"| {r.analysis.label} | {step_text} | {r.verdict.bottleneck} | "
                f"{r.analysis.breakdown.get('communication', 0.0):.1%} |"
                + (f" {r.node or 'n/a'} |" if nodes else "")
            )
        lines.append("")
        standings = [(r.analysis.label, line.strip()) for r in report.ranks
                     for line in standing_lines(r.standing)]  # fmt: skip
        if standings:
            lines += [f"- {label}: {line}" for label, line in standings] + [""]
    if report.nodes:
        lines += ["## Nodes", "", "| node | ranks | host | cpu | memory | gpu | ended |"]
        lines.append("|---|---|---|---:|---:|---:|---|")
        lines += ["| " + " | ".join(node_fields(n)) + " |" for n in report.nodes] + [""]
    lines += efficiency_markdown(job)
    lines += memory_markdown(job)
    lines += modules_markdown(job)
    notes = list(dict.fromkeys((*report.notes, *job.notes)))
    if notes:
        lines += ["## Notes", ""] + [f"- {n}" for n in notes] + [""]
    return "\n".join(lines)
