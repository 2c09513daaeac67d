"""Several jobs' reports at once (a folder of traces that are not one job): a summary table,
then each job's own report, in text, Markdown or JSON.

The JSON is a new document, `torchtop.reports/1`, holding each job's `torchtop.report/1`
unchanged, rather than a report with the jobs folded in: a script that reads one report keeps
reading every input that is one job exactly as before, and one that meets several sees the
`schema` change instead of a verdict that describes none of the jobs (docs/report.md).
"""

from __future__ import annotations

import json
from pathlib import PurePath

from torchtop.model.report import JobReports, Report
from torchtop.report.contract import report_to_json, steps_per_s
from torchtop.report.markdown import render_markdown
from torchtop.report.text import render_text

SCHEMA = "torchtop.reports/1"
_COLUMNS = ("job", "traces", "steps", "mean ms", "steps/s", "GPU busy", "bottleneck", "conf")


def job_name(report: Report) -> str:
    """The job's first file by name, and how many more files and ranks it has."""
    names = [PurePath(p).name for p in report.paths]
    if len(names) == 1:
        return names[0]
    ranks = len(report.ranks) or 1
    return f"{names[0]} +{len(names) - 1} ({ranks} rank{'s' if ranks != 1 else ''})"


def summary_rows(jobs: JobReports) -> list[tuple[str, ...]]:
    """One row per job: its name, files, steps, mean step, rate, GPU busy and verdict."""
    rows: list[tuple[str, ...]] = []
    for report in jobs.reports:
        metrics, verdict = report.job.metrics, report.verdict
        mean, rate = metrics.get("step_mean_ms"), steps_per_s(metrics)
        util = metrics.get("gpu_utilization")
        rows.append(
            (
                job_name(report),
                str(len(report.paths)),
                str(metrics.get("steps_count") or 0),
                f"{mean:.1f}" if isinstance(mean, int | float) else "n/a",
                f"{rate:.2f}" if rate else "n/a",
                f"{util:.1%}" if isinstance(util, int | float) else "no GPU",
                verdict.bottleneck,
                f"{verdict.confidence:.2f}" if verdict.bottleneck != "unknown" else "-",
            )
        )
    return rows


def headline(jobs: JobReports) -> str:
    count = len(jobs.reports)
    why = "; ".join(jobs.apart) or "their files do not look like ranks of one job"
    return f"{count} jobs, each analysed on its own: {why}. `--one-job` reads them as one job"


def render_jobs(jobs: JobReports, output_format: str, colour: bool = False) -> str:
    """`analyze`'s output: one job's report as it always was, or several jobs' summary and
    reports; `output_format` is text, json or markdown."""
    one = jobs.reports[0] if len(jobs.reports) == 1 else None
    if output_format == "json":
        document = report_to_json(one) if one is not None else jobs_to_json(jobs)
        return json.dumps(document, indent=2) + "\n"
    if output_format == "markdown":
        return render_markdown(one) if one is not None else render_jobs_markdown(jobs)
    return render_text(one, colour) if one is not None else render_jobs_text(jobs, colour)


def render_jobs_text(jobs: JobReports, colour: bool = False) -> str:
    """Several jobs' summary and reports; one job's report alone, as `analyze` prints it (`view`
    without a terminal said "1 jobs, each analysed on its own" over a run folder's report)."""
    if len(jobs.reports) == 1:
        return render_text(jobs.reports[0], colour)
    rows = [_COLUMNS, *summary_rows(jobs)]
    widths = [max(len(row[i]) for row in rows) for i in range(len(_COLUMNS))]
    lines = [f"torchtop · {headline(jobs)}", ""]
    for row in rows:
        cells = [c.ljust(w) if i in (0, 6) else c.rjust(w) for i, (c, w) in
                 enumerate(zip(row, widths, strict=True))]  # fmt: skip
        lines.append("  " + "  ".join(cells).rstrip())
    lines += _skipped_lines(jobs, "SKIPPED", "  ")
    for number, report in enumerate(jobs.reports, 1):
        title = f"── job {number} of {len(jobs.reports)}: {job_name(report)} "
        lines += ["", title.ljust(78, "─"), ""]
        lines.append(render_text(report, colour=colour).rstrip("\n"))
    return "\n".join(lines) + "\n"


def render_jobs_markdown(jobs: JobReports) -> str:
    lines = [f"# torchtop: {headline(jobs)}", ""]
    lines += ["| " + " | ".join(_COLUMNS) + " |", "|---|" + "---:|" * 5 + "---|---:|"]
    lines += ["| " + " | ".join(row) + " |" for row in summary_rows(jobs)]
    lines += _skipped_lines(jobs, "## Skipped\n", "- ")
    for report in jobs.reports:
        # Each job's report one heading level down, under the summary's.
        own = render_markdown(report).rstrip("\n").split("\n")
        lines += ["", *("#" + line if line.startswith("#") else line for line in own)]
    return "\n".join(lines) + "\n"


def jobs_to_json(jobs: JobReports) -> dict[str, object]:
    """`torchtop.reports/1`: each job's report (`torchtop.report/1`), why the traces are not
    one job, and the files that could not be read."""
    return {
        "schema": SCHEMA,
        "apart": list(jobs.apart),
        "reports": [report_to_json(r) for r in jobs.reports],
        "skipped": [{"path": s.path, "problem": s.problem} for s in jobs.skipped],
    }


def _skipped_lines(jobs: JobReports, title: str, bullet: str) -> list[str]:
    if not jobs.skipped:
        return []
    return ["", title, *(f"{bullet}{s.path}: {s.problem}" for s in jobs.skipped)]
