"""`diff(a, b)`: what changed from A to B, as `torchtop diff A B --format json` says it.

A side is a trace, a folder of ranks, a run folder, a saved JSON report (each read by
`sessions.diff.load_side`, as the CLI reads it) or a `Report` already in hand. The CLI calls
this and shows what it returns (`sessions.diff.show_diff`).
"""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from torchtop.api.analyzing import rule_tree
from torchtop.api.report import Report

if TYPE_CHECKING:
    from torchtop.diagnosis.rules import RuleTree
    from torchtop.fanout import FileReader
    from torchtop.model.diff import DiffSide, Document

Side = str | Path | Report


class Diff:
    """The comparison: both reports and the changes between them (`torchtop.diff/1`)."""

    def __init__(self, document: Document) -> None:
        self._text = json.dumps(document, indent=2) + "\n"

    def to_dict(self) -> dict[str, Any]:
        """The document `torchtop diff A B --format json` prints (a fresh copy each call)."""
        return json.loads(self._text)  # type: ignore[no-any-return]

    @property
    def changes(self) -> dict[str, Any]:
        """Settings first, then steps, breakdown, verdict, operators, kernels, memory..."""
        return self.to_dict()["changes"]  # type: ignore[no-any-return]

    @property
    def a(self) -> Report:
        return Report(json.dumps(self.to_dict()["a"], indent=2) + "\n", from_json=True)

    @property
    def b(self) -> Report:
        return Report(json.dumps(self.to_dict()["b"], indent=2) + "\n", from_json=True)

    def render(self, output_format: str = "text") -> str:
        """The comparison as `torchtop diff --format FORMAT` prints it: text, markdown, json."""
        if output_format == "json":
            return self._text
        from torchtop.report.diff_text import render_diff_markdown, render_diff_text

        if output_format == "markdown":
            return render_diff_markdown(self.changes)
        return render_diff_text(self.changes)

    def _repr_html_(self) -> str:
        return f"<pre>{html.escape(self.render('text'))}</pre>"


def diff(
    a: Side, b: Side, *, rules: str | Path | RuleTree | None = None, cluster: str | None = None
) -> Diff:
    """Compare A with B (ratios are B/A). `rules` and `cluster` as for `analyze`; a cluster
    given reads both sides' trace files, opened once."""
    from torchtop.api.analyzing import trace_files_reader
    from torchtop.report.diff import diff_document

    tree = rule_tree(rules)
    with trace_files_reader(cluster) as reader:
        return Diff(diff_document(_side(a, tree, reader), _side(b, tree, reader)))


def _side(side: Side, tree: RuleTree, reader: FileReader) -> DiffSide:
    if isinstance(side, Report):
        from torchtop.model.diff import DiffSide

        # Named as the CLI names a side: the file it was given (the saved report's own).
        label = str(side.file) if side.file else (side.paths[0] if side.paths else side.name)
        return DiffSide(side.job_document(), label, from_json=side.from_json)
    from torchtop.sessions.diff import load_side

    return load_side(str(side), tree, reader)
