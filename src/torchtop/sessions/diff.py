"""`torchtop diff A B`'s sides: each read into its JSON report, for `torchtop.diff` (which
works out the changes; the CLI prints them or shows them side by side).

A side is a trace, a folder of ranks, a run folder (a trial's `before-1`/`after-1` among them),
or a JSON report written by `--report`/`--format json`: told apart by the report's opening
`"schema": "torchtop.report/1"`, read from the file's first bytes (a trace can be large).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from torchtop.diagnosis.rules import RuleTree
from torchtop.errors import InputError
from torchtop.fanout import FileReader, read_files
from torchtop.model.diff import DiffSide, Document
from torchtop.report.contract import report_to_json
from torchtop.sessions.offline import analyze_paths

REPORT_START = re.compile(rb'^\s*\{\s*"schema"\s*:\s*"torchtop\.report/')
PEEK_BYTES = 256


def load_side(path: str, tree: RuleTree, reader: FileReader = read_files) -> DiffSide:
    """One side of the diff: a saved JSON report as it is, anything else analysed now (its
    trace files read by `reader`: the local pool, or a Dask cluster's tasks)."""
    target = Path(path)
    if not target.exists():
        raise InputError(path, "no such file or folder")
    if target.is_file() and _is_json_report(target):
        return DiffSide(_read_report(target), path, from_json=True)
    return DiffSide(report_to_json(analyze_paths([path], rules=tree, reader=reader)), path)


def _is_json_report(path: Path) -> bool:
    if path.suffix != ".json":
        return False
    with path.open("rb") as file:
        return REPORT_START.match(file.read(PEEK_BYTES)) is not None


def _read_report(path: Path) -> Document:
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(str(path), f"not a readable JSON report ({exc})") from None
    if not isinstance(document, dict) or not isinstance(document.get("source"), dict):
        raise InputError(str(path), "not a torchtop JSON report (no `source`)")
    return document
