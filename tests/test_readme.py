"""The README is a user's first five minutes: its example output is what the code prints today,
its keys table names every key the dashboard's help does, it stays short, and the test command
it gives is the one CI runs."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from torchtop.cli import main
from torchtop.tui.helpscreen import KEYS

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def _block_after(command: str) -> list[str]:
    """The lines of the first plain code block after the one holding `command`."""
    closed = README.index("\n```\n", README.index(command))  # the command's own block
    opened = README.index("\n```\n", closed + 1) + len("\n```\n")
    return README[opened : README.index("\n```", opened)].split("\n")


def test_the_analyze_example_is_what_analyze_prints_today(
    capsys: pytest.CaptureFixture[str],
) -> None:
    shown = _block_after("torchtop analyze sample_traces/dataloader_starved")
    assert shown[-1] == "...", "the example ends with ... where it is cut"
    assert main(["analyze", str(ROOT / "sample_traces" / "dataloader_starved")]) == 0
    printed = capsys.readouterr().out.split("\n")
    assert shown[:-1] == printed[: len(shown) - 1]


def test_the_keys_table_names_every_key_of_the_dashboards_help() -> None:
    table = README[README.index("## Keys") : README.index("## FAQ")]
    words = {"up": "↑", "down": "↓", "pgup": "PgUp", "pgdn": "PgDn", "home": "Home",
             "end": "End", "left": "←", "right": "→", "mouse wheel": "mouse wheel"}  # fmt: skip
    for key, _ in KEYS:
        for part in re.split(r" / | \(", key):
            name = part.strip(" )")
            if name in ("Step time", "output"):
                continue
            assert f"`{words.get(name, name)}`" in table or words.get(name, "") in table, name


def test_the_readme_is_a_first_five_minutes_not_a_manual() -> None:
    assert len(README.splitlines()) <= 180
    sections = re.findall(r"^## (.+)$", README, re.M)
    assert sections[:4] == ["Requirements", "Install", "Run the demo", "The verbs"]
    assert sections[-1] == "Development"


def test_the_readmes_test_command_is_the_one_ci_runs() -> None:
    development = README[README.index("## Development") :]
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "python -m pytest -n 2 --dist loadgroup --durations=30 tests" in development
    assert "python -m pytest -n 2 --dist loadgroup --durations=30 tests" in ci
    assert 'pip install -e ".[test,frameworks,cluster]" "torch==2.13.0"' in development
    assert 'pip install -e ".[test,frameworks,cluster]" "torch==2.13.0"' in ci


def test_every_verb_in_the_cli_has_its_paragraph() -> None:
    for verb in ("run", "attach", "analyze", "view", "diff", "tune", "watch", "rules", "demo"):
        assert f"torchtop {verb}" in README, verb
