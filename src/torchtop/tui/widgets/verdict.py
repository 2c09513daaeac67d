"""The verdict: the class and its confidence, the rule chain behind it, and the numbers that
prove it; `unknown` says what is still missing.

Live, the verdict shown is the one that held through the hysteresis; when the newest
assessment differs, a line says which class is being confirmed, so a change is never silent.
A profiler window whose own verdict differs from the pooled one is named on a line of its own.
"""

from __future__ import annotations

from collections.abc import Mapping

from rich.console import Console
from rich.text import Text

from torchtop.model.analysis import MetricValue
from torchtop.model.findings import Finding, Verdict, gain_text
from torchtop.report.windows import disagreeing, windows_line
from torchtop.tui.charts import metric_text
from torchtop.tui.frame import Frame
from torchtop.tui.palette import (
    MUTED,
    SEVERITY_COLOUR,
    SEVERITY_WORD,
    VERDICT_COLOUR,
    VERDICT_DEFAULT_COLOUR,
)
from torchtop.tui.widgets.listpanel import ListPanel, Row

EVIDENCE_SHOWN = 3


def evidence_line(evidence: Mapping[str, MetricValue]) -> Text:
    every: list[tuple[str, MetricValue]] = list(evidence.items())
    shown = ([(k, v) for k, v in every if v is not None] or every)[:EVIDENCE_SHOWN]
    return Text("  ".join(metric_text(k, v) for k, v in shown))


class VerdictPanel(ListPanel):
    """Every line wrapped to the panel's width, nothing cut: the rest is a scroll away."""

    TITLE = "Verdict"
    CURSOR = False

    def rows(self, frame: Frame, width: int, height: int) -> tuple[list[Text], list[Row]]:
        console = Console(width=width, no_color=True, legacy_windows=False)
        wrapped = [part for line in self.lines_at(frame, width, height)
                   for part in line.wrap(console, width, overflow="fold")]  # fmt: skip
        for line in wrapped:
            line.rstrip()
        return [], [Row(line) for line in wrapped]

    def lines_at(self, frame: Frame, width: int, height: int) -> list[Text]:
        verdict, assessed = frame.verdict, frame.report.verdict
        lines = headline(verdict, width)
        if frame.live and assessed.bottleneck != verdict.bottleneck:
            lines.append(Text(f"now assessing {assessed.bottleneck}: shown once it holds"))
            lines.append(Text(assessed.reason, style=MUTED))
        elif verdict.bottleneck == "unknown":
            lines.append(Text(f"missing: {verdict.reason}", style="#e0b000"))
        if disagreeing(frame.report.windows):
            pooled = windows_line(frame.report.windows, assessed.bottleneck)
            lines.append(Text(pooled or "", style="#e0b000"))
        if verdict.bottleneck == "unknown":
            lines += [Text(note, style=MUTED) for note in frame.report.job.notes[:2]]
        else:
            lines += proof(verdict, width, roomy=height - len(lines) >= 8)
        return lines


def headline(verdict: Verdict, width: int) -> list[Text]:
    """`DATALOADER · 33% recoverable · confidence 1.00`; the confidence on a line of its own
    where the whole does not fit, so the class and its share are never cut or split."""
    style = VERDICT_COLOUR.get(verdict.bottleneck, VERDICT_DEFAULT_COLOUR)
    text = Text(verdict.bottleneck.upper(), style=style)
    if verdict.bottleneck == "unknown":
        return [text]
    share = verdict.recoverable.get(verdict.bottleneck)
    if share is not None:  # the share of the step its fixes may recover (the verdict's score)
        text.append(f" · {share:.0%} recoverable", style="bold")
    confidence = f"confidence {verdict.confidence:.2f}"
    if len(text) + 3 + len(confidence) > width:
        return [text, Text(confidence)]
    return [text + Text(f" · {confidence}")]


def proof(verdict: Verdict, width: int, roomy: bool) -> list[Text]:
    """The top finding's chain, message and evidence, the score that decided; when there is
    room, each number on its own line and the other findings after."""
    reason = Text(verdict.reason, style=MUTED)
    if not verdict.findings:
        return [reason]
    top = verdict.findings[0]
    lines = [chain_line(top, width), Text(top.message), Text(gain_text(top), style=MUTED)]
    if not roomy:
        return [*lines, evidence_line(top.evidence), reason]
    lines += [Text("  " + metric_text(k, v)) for k, v in top.evidence.items()]
    lines.append(reason)
    for other in verdict.findings[1:]:
        lines.append(Text("also ", style=MUTED) + chain_line(other, width - 5))
    return lines


def chain_line(finding: Finding, width: int) -> Text:
    """`HIGH dataloader › dataloader-starved`; where the whole does not fit, the nodes nearest
    the root give way to `…` until the rest does (the matched rule, the last, always stays), so
    the path is never cut, nor wrapped, in the middle."""
    word = SEVERITY_WORD.get(finding.severity, finding.severity)
    text = Text(f"{word:<5}", style=SEVERITY_COLOUR.get(finding.severity, ""))
    text.append(chain_path(finding.chain, width - len(text)), style="bold")
    return text


def chain_path(chain: tuple[str, ...], width: int) -> str:
    """`a › b › c`, or `… › b › c`, `… › c`: the last nodes that fit in `width` cells."""
    whole = " › ".join(chain)
    for start in range(1, len(chain)):
        if len(whole) <= width:
            break
        whole = "… › " + " › ".join(chain[start:])
    return whole
