"""`--headless`: progress lines on stderr while watching, the report at the end.

A progress line is printed when the shown verdict or a rank's news (a straggler named, a rank
ended) changes and otherwise every few seconds, so a long run's log stays readable and a dead
rank is named at the tick that finds it, and once more from the final report. Its steps/s is the
report's: the whole watched period's rate.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from torchtop.model.findings import Verdict, format_value
from torchtop.model.report import Report
from torchtop.report import render_text, report_to_json
from torchtop.report.contract import steps_per_s
from torchtop.runs.journal import write_once
from torchtop.runs.layout import RunLayout

QUIET_INTERVAL_S = 5.0


@dataclass
class ProgressPrinter:
    stream: TextIO = sys.stderr
    last_verdict: str | None = None
    last_print_s: float = -QUIET_INTERVAL_S
    last_news: tuple[str, ...] = ()

    def __call__(self, report: Report, shown: Verdict, elapsed_s: float) -> None:
        # Which ranks are stragglers or ended, not by how much: a figure that moves each tick
        # would print every line.
        news = tuple(sorted(_news_kind(line) for line in rank_news(report)))
        changed = shown.bottleneck != self.last_verdict or news != self.last_news
        if not changed and elapsed_s - self.last_print_s < QUIET_INTERVAL_S:
            return
        self.last_verdict, self.last_print_s, self.last_news = shown.bottleneck, elapsed_s, news
        self.stream.write(progress_line(report, shown, elapsed_s) + "\n")
        self.stream.flush()

    def final(self, report: Report, elapsed_s: float) -> None:
        """The last line, from the final report, so the log ends on the figures it reports."""
        self.last_print_s = -QUIET_INTERVAL_S
        self.last_verdict = None
        self(report, report.verdict, elapsed_s)


def progress_line(report: Report, shown: Verdict, elapsed_s: float) -> str:
    metrics = report.job.metrics
    parts = [f"torchtop {elapsed_s:6.1f}s"]
    processes = len(report.ranks) or (1 if metrics.get("steps_count") else 0)
    # The report's own rate (the whole watched period's), so the line and the report agree.
    rate = steps_per_s(metrics)
    if rate:
        parts.append(f"{rate:6.2f} steps/s")
    share = metrics.get("dataloader_share")
    if isinstance(share, float):
        parts.append(f"dataloader {share:4.0%}")
    if processes > 1:
        parts.append(f"{processes} ranks")
        parts += rank_news(report)
    verdict = shown.bottleneck
    if verdict != "unknown":
        verdict += f" ({shown.confidence:.2f})"
        if shown.findings and shown.findings[0].fixes:
            fix = shown.findings[0].fixes[0]
            verdict += f"; fix: {fix.knob} = {format_value(fix.value)}"
    else:
        verdict += f": {shown.reason}"
    parts.append(f"verdict {verdict}")
    return "  ".join(parts)


def rank_news(report: Report) -> list[str]:
    """A straggler, each rank its launcher restarted and each rank that has ended, named on
    the progress line."""
    news = []
    for item in report.ranks:
        standing, label = item.standing, item.analysis.label
        if item.restarted_words is not None:
            news.append(f"{label} {item.restarted_words}")
        if standing is not None and standing.straggler and standing.slower_by is not None:
            news.append(f"{label} straggler {standing.slower_by:+.0%}")
        if standing is not None and standing.ended is not None:
            news.append(f"{label} {standing.ended}")
    return news


def _news_kind(news: str) -> str:
    """`rank 1 straggler` of `rank 1 straggler +40%`: what changed, without the figure."""
    return news.rsplit(" ", 1)[0] if " straggler " in news else news


def save_report(report: Report, run_dir: Path | None, extra_path: str | None) -> None:
    document = report_to_json(report)
    if run_dir is not None:
        write_once(RunLayout(run_dir).report_json, document)
    if extra_path:
        Path(extra_path).write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")


def print_report(report: Report, output_format: str) -> None:
    """The final report on stdout: text, or (`--format json`) the JSON report, the same
    document as `report.json`."""
    if output_format == "json":
        sys.stdout.write(json.dumps(report_to_json(report), indent=2) + "\n")
    else:
        sys.stdout.write(render_text(report, colour=False))
    sys.stdout.flush()
