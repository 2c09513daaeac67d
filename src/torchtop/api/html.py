"""A report in a notebook (`Report._repr_html_`): the verdict, the step bar as the terminal
draws it, then the findings and their fixes.

Built from the JSON report, so a loaded report shows the same. The bar is the text report's own
(`report.text.bar_counts`, its glyphs and colours), its ANSI colours turned into CSS ones; every
string from the report is escaped.
"""

from __future__ import annotations

from html import escape
from typing import Any

from torchtop.api.frames import fix_text
from torchtop.report.text import BAR_WIDTH, GLYPHS, bar_counts

ANSI_CSS = {
    "31": "#cd3131", "32": "#0dbc79", "33": "#b8a000", "34": "#2472c8", "35": "#bc3fbc",
    "36": "#11a8cd", "90": "#767676",
}  # fmt: skip
SEVERITY_CSS = {"high": "#cd3131", "medium": "#b8a000", "low": "#767676"}


def report_html(document: dict[str, Any]) -> str:
    """One job's report as an HTML fragment."""
    parts = [_verdict(document), _steps(document), _findings(document.get("findings") or [])]
    return '<div class="torchtop-report">' + "".join(parts) + "</div>"


def _verdict(document: dict[str, Any]) -> str:
    bottleneck = str(document["bottleneck"])
    head = f"<b>VERDICT {escape(bottleneck.upper())}</b>"
    if bottleneck != "unknown":
        head += f" · confidence {float(document['confidence']):.2f}"
    reason = (document.get("verdict") or {}).get("reason") or ""
    return f"<p>{head}<br>{escape(str(reason))}</p>"


def _steps(document: dict[str, Any]) -> str:
    steps = document.get("steps") or {}
    mean, rate = steps.get("mean_ms"), steps.get("steps_per_s")
    head = "<b>STEP</b> " + (f"{mean:.1f} ms mean" if mean is not None else "not measured")
    head += f" · {rate:.2f} steps/s" if rate else ""
    util = (document.get("gpu") or {}).get("utilization")
    head += f" · GPU busy {util:.1%}" if util is not None else " · no GPU in trace"
    breakdown: dict[str, float] = document.get("breakdown") or {}
    return f"<p>{head}</p><pre>{step_bar(breakdown)}\n{_legend(breakdown)}</pre>"


def step_bar(breakdown: dict[str, float]) -> str:
    """The text report's bar: BAR_WIDTH cells, each category's share in its colour."""
    counts = bar_counts(breakdown)
    cells = "".join(
        f'<span style="color:{ANSI_CSS[code]}" title="{c} {breakdown.get(c, 0.0):.1%}">'
        f"{'█' * counts[c]}</span>"
        for c, (_, code) in GLYPHS.items()
        if counts[c]
    )
    return f"[{cells or ' ' * BAR_WIDTH}]"


def _legend(breakdown: dict[str, float]) -> str:
    ranked = sorted(breakdown.items(), key=lambda item: item[1], reverse=True)
    return "  ".join(
        f'<span style="color:{ANSI_CSS[GLYPHS[c][1]]}">{GLYPHS[c][0]}</span> {c} {share:.1%}'
        for c, share in ranked
        if c in GLYPHS and share >= 0.0005
    )


def _findings(findings: list[dict[str, Any]]) -> str:
    if not findings:
        return "<p><b>FINDINGS</b> none</p>"
    items = "".join(_finding(f) for f in findings)
    return f"<p><b>FINDINGS</b></p><ul>{items}</ul>"


def _finding(finding: dict[str, Any]) -> str:
    severity = str(finding.get("severity", ""))
    colour = SEVERITY_CSS.get(severity, "inherit")
    chain = " › ".join(str(c) for c in finding.get("chain") or [finding.get("rule")])
    fixes = "".join(
        f"<li>→ <code>{escape(fix_text(fix))}</code> {escape(str(fix.get('description', '')))}"
        + (f"<br><small>{escape(str(fix['where']))}</small>" if fix.get("where") else "")
        + "</li>"
        for fix in finding.get("fixes") or []
    )
    return (
        f'<li><span style="color:{colour}">{escape(severity)}</span> {escape(chain)}<br>'
        f"{escape(str(finding.get('message', '')))}"
        + (f"<ul>{fixes}</ul>" if fixes else "")
        + "</li>"
    )
