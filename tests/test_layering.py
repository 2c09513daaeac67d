"""Layering: the offline analyzer never imports torch (the job's) nor textual (the live UI)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.synthetic import document, two_step_loop, write_json

PROBE = """
import contextlib, importlib, io, sys
if sys.argv[2]:
    importlib.import_module(sys.argv[2])
import torchtop.cli as c
with contextlib.redirect_stdout(io.StringIO()) as report:
    status = c.main(['analyze', sys.argv[1], '--format', 'json'])
assert status == 0 and report.getvalue().startswith('{'), status
print('torch' in sys.modules, 'textual' in sys.modules)
"""


def heavy_modules_after_analyze(path: Path, preload: str = "") -> str:
    result = subprocess.run(
        [sys.executable, "-c", PROBE, str(path), preload],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def test_the_probe_sees_a_heavy_module_once_something_imports_it(tmp_path: Path) -> None:
    # Guards the probe itself: if analyze did import textual, the same check would say so.
    trace = write_json(tmp_path / "loop.json", document(two_step_loop()))
    assert heavy_modules_after_analyze(trace, preload="textual") == "False True"


def test_analyze_imports_neither_torch_nor_textual(tmp_path: Path) -> None:
    trace = write_json(tmp_path / "loop.json.gz", document(two_step_loop()))
    assert heavy_modules_after_analyze(trace) == "False False"


def test_analyze_on_a_real_trace_imports_neither_torch_nor_textual(shared: Path) -> None:
    trace = shared / "hta/trace_compare/base/base.json.gz"
    assert heavy_modules_after_analyze(trace) == "False False"
