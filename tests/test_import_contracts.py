"""The layers of docs/architecture.md hold: import-linter's contracts in pyproject.toml pass.

The contracts are the enforcement; this test makes the suite (and so CI) run them, and checks
that they would catch a back edge: a copy of the package with one upward import planted fails.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LINT = (
    "import sys; from importlinter.cli import lint_imports_command; "
    "sys.exit(lint_imports_command())"
)


def lint(project: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", LINT, "--no-cache", "--no-logo"],
        cwd=project,
        env={"PYTHONPATH": str(project / "src"), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_the_import_contracts_are_kept() -> None:
    result = lint(ROOT)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    assert "broken" not in result.stdout.lower().replace("0 broken", "")


def test_an_upward_import_breaks_the_layers_contract(tmp_path: Path) -> None:
    shutil.copytree(ROOT / "src", tmp_path / "src", ignore=shutil.ignore_patterns("*.egg-info"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    model = tmp_path / "src/torchtop/model/report.py"
    model.write_text(model.read_text() + "\nfrom torchtop.tui import app as _app  # noqa\n")
    result = lint(tmp_path)
    assert result.returncode != 0
    assert "torchtop.model.report -> torchtop.tui.app" in result.stdout
