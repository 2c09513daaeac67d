"""`import torchtop` stays light: a training script imports it for `torchtop.step()`, and a
notebook before it has asked for anything. Checked in a fresh interpreter's `sys.modules`."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import python_run

HEAVY = ("torch", "pandas", "numpy", "textual", "typing")
OFF_THE_PATH = ("torchtop.cluster", "logging", "subprocess", "tempfile", "difflib", "pandas")
SAMPLES = Path(__file__).resolve().parents[2] / "sample_traces"
LISTED = f"import sys, json; print(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))"


def test_importing_torchtop_imports_none_of_torch_pandas_numpy_textual() -> None:
    # `typing` too: it brings `re` and triples the cost of the import (docs/api.md).
    done = python_run(f"import torchtop\n{LISTED}")
    assert json.loads(done.stdout) == []


def test_the_api_names_are_there_yet_pandas_waits_for_a_table() -> None:
    code = (
        "import torchtop\n"
        "assert {'analyze', 'diff', 'load_report', 'compare', 'Report'} <= set(dir(torchtop))\n"
        "assert callable(torchtop.analyze) and torchtop.Report.__name__ == 'Report'\n"
        f"{LISTED}"
    )
    assert json.loads(python_run(code).stdout) == ["typing"]


def test_analyze_of_a_small_trace_leaves_what_it_does_not_use_unimported() -> None:
    """The start-up of `analyze` (issue 35): Dask's `cluster` only with --cluster, logging
    with it; subprocess and tempfile only for a big trace's spill (`ctypes.util` and
    `tempfile` were imported for every trace); difflib only for a mistyped verb."""
    [trace] = (SAMPLES / "healthy").glob("*.pt.trace.json.gz")
    code = (
        "import contextlib, io, json, sys\n"
        "from torchtop.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    assert main(['analyze', {str(trace)!r}, '--format', 'json']) == 0\n"
        f"print(json.dumps([m for m in {OFF_THE_PATH!r} if m in sys.modules]))"
    )
    assert json.loads(python_run(code).stdout) == []
