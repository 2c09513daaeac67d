"""`import torchtop` stays light: a training script imports it for `torchtop.step()`, and a
notebook before it has asked for anything. Checked in a fresh interpreter's `sys.modules`."""

from __future__ import annotations

import json

from tests.conftest import python_run

HEAVY = ("torch", "pandas", "numpy", "textual", "typing")
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
