"""`mypy --strict` holds on the package, its tests and its benchmarks: pyproject.toml's
`[tool.mypy]`, run as a developer runs it (`mypy`, no arguments), so the suite and CI fail on a
type error.

mypy keeps its cache in `.mypy_cache/`: from a clean clone the run takes about 20 s on two
loaded cores, after that about a second.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_mypy_strict_passes_on_the_package_and_on_the_tests() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "mypy"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    output = result.stdout[-6000:] + result.stderr[-2000:]
    assert result.returncode == 0, output
    checked = re.search(r"no issues found in (\d+) source files", result.stdout)
    assert checked is not None, output
    package = sum(1 for _ in (ROOT / "src" / "torchtop").rglob("*.py"))
    tests = sum(1 for _ in (ROOT / "tests").rglob("*.py"))
    # The benchmarks too: a change of types once broke two that only running them showed.
    benchmarks = sum(1 for _ in (ROOT / "benchmarks").rglob("*.py"))
    assert int(checked.group(1)) == package + tests + benchmarks, "every module is checked"
