"""Render a `Report`: the contract's JSON, a terminal text report, Markdown."""

from torchtop.report.contract import report_to_json
from torchtop.report.markdown import render_markdown
from torchtop.report.text import render_text

__all__ = ["render_markdown", "render_text", "report_to_json"]
