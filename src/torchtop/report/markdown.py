"""The report as Markdown, for issues, pull requests and notebooks."""

from __future__ import annotations

from torchtop.model.findings import gain_text
from torchtop.model.report import Report
from torchtop.report.contract import BREAKDOWN_KEYS


def render_markdown(report: Report) -> str:
    job, verdict = report.job, report.verdict
    lines = [f"# torchtop report: {job.label}", ""]
    verdict_line = f"**Bottleneck: `{verdict.bottleneck}`**"
    if verdict.bottleneck != "unknown":
        verdict_line += f" (confidence {verdict.confidence:.2f})"
    lines += [verdict_line + f" — {verdict.reason}", ""]
    mean = job.metrics.get("step_mean_ms")
    if isinstance(mean, int | float):
        lines += [f"Mean step {mean:.1f} ms over {job.metrics.get('steps_count')} steps.", ""]
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
    if report.ranks:
        lines += [
            "## Ranks",
            "",
            "| rank | mean step (ms) | bottleneck | communication |",
            "|---|---:|---|---:|",
        ]
        for r in report.ranks:
            step = r.analysis.metrics.get("step_mean_ms")
            step_text = f"{step:.1f}" if isinstance(step, int | float) else "n/a"
            lines.append(
                f"| {r.analysis.label} | {step_text} | {r.verdict.bottleneck} | "
                f"{r.analysis.breakdown.get('communication', 0.0):.1%} |"
            )
        lines.append("")
    notes = list(dict.fromkeys((*report.notes, *job.notes)))
    if notes:
        lines += ["## Notes", ""] + [f"- {n}" for n in notes] + [""]
    return "\n".join(lines)
