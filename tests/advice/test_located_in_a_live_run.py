"""Under `torchtop run`, a code fix names the line of the user's loop that py-spy saw running."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.conftest import WORKLOADS
from tests.live.test_live_verdicts import run_headless
from torchtop.collectors.stacks import find_py_spy

JOB = WORKLOADS / "tiny_ops.py"


@pytest.mark.slow
@pytest.mark.skipif(find_py_spy() is None, reason="py-spy is not installed")
def test_a_python_bound_jobs_compile_fix_names_a_line_of_its_training_loop(
    tmp_path: Path,
) -> None:
    report = run_headless(tmp_path, [sys.executable, str(JOB), "--seconds", "9"])
    fixes = [fix for f in report["findings"] for fix in f["fixes"] if fix["apply"] == "code"]
    assert fixes, [f["rule"] for f in report["findings"]]
    where = fixes[0]["where"]
    file, line, text = where.split(":", 2)
    assert Path(file) == JOB
    source = JOB.read_text().splitlines()
    assert source[int(line) - 1].strip() == text.strip()
    loop_start = next(i for i, s in enumerate(source, 1) if s.strip().startswith("while "))
    assert int(line) > loop_start, f"{where} is not inside the training loop"
