"""`torchtop tune`'s command line: the contract's shared options, checked before any job runs.

`tune_session` (or the loop under it) is replaced by a recorder, so nothing is launched.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from torchtop.cli import main
from torchtop.sessions import tune as session
from torchtop.sessions.tune import TuneCommand
from torchtop.tuning.tune import DEFAULT_BUDGET_S

EXIT_BAD_INPUT = 2
COMMAND = ["--", "python", "train.py", "--epochs", "1"]


class Launched(Exception):
    """Raised by the stand-in for the tuning loop: the point where a job would start."""


@pytest.fixture
def sessions(monkeypatch: pytest.MonkeyPatch) -> list[tuple[list[str], TuneCommand]]:
    seen: list[tuple[list[str], TuneCommand]] = []

    def record(command: Sequence[str], options: TuneCommand, tree: object) -> int:
        seen.append((list(command), options))
        return 0

    monkeypatch.setattr(session, "tune_session", record)
    return seen


def test_for_is_the_time_budget_of_tune(sessions: list[tuple[list[str], TuneCommand]]) -> None:
    assert main(["tune", "--for", "150", *COMMAND]) == 0
    ((command, options),) = sessions
    assert options.budget_s == 150.0
    assert command == ["python", "train.py", "--epochs", "1"]


def test_budget_is_the_older_name_of_for_and_the_last_one_given_counts(
    sessions: list[tuple[list[str], TuneCommand]],
) -> None:
    main(["tune", "--budget", "90", *COMMAND])
    main(["tune", "--for", "60", "--budget", "90", *COMMAND])
    main(["tune", "--budget", "90", "--for", "60", *COMMAND])
    assert [options.budget_s for _, options in sessions] == [90.0, 90.0, 60.0]


def test_the_budget_is_300_seconds_unless_given(
    sessions: list[tuple[list[str], TuneCommand]],
) -> None:
    main(["tune", *COMMAND])
    assert sessions[0][1].budget_s == DEFAULT_BUDGET_S == 300.0


def test_tune_accepts_the_options_shared_with_run(
    sessions: list[tuple[list[str], TuneCommand]], tmp_path: Path
) -> None:
    argv = ["tune", "--headless", "--for", "30", "--report", str(tmp_path / "r.json")]
    assert main([*argv, "--run-dir", str(tmp_path / "run"), *COMMAND]) == 0
    ((_, options),) = sessions
    assert options.report == str(tmp_path / "r.json")
    assert options.run_dir == tmp_path / "run"


@pytest.mark.parametrize("value", ["0", "-5", "soon", "nan", "inf"])
def test_a_budget_that_is_not_a_positive_number_exits_2_with_one_line_naming_for(
    sessions: list[tuple[list[str], TuneCommand]], capsys: pytest.CaptureFixture[str], value: str
) -> None:
    assert main(["tune", "--for", value, *COMMAND]) == EXIT_BAD_INPUT
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("torchtop: --for/--budget: ") and repr(value) in line
    assert sessions == []


def test_tune_records_under_torchtop_runs_in_the_current_folder_by_default(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    run_dirs: list[Path] = []

    def loop(command: Sequence[str], options: Any, tree: Any, run_dir: Path, **_: Any) -> None:
        run_dirs.append(run_dir)
        raise Launched

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(session, "tune", loop)
    with pytest.raises(Launched):
        main(["tune", "--headless", *COMMAND])
    (run_dir,) = run_dirs
    assert run_dir.parent == tmp_path / "torchtop-runs"
    assert re.fullmatch(r"\d{8}-\d{6}", run_dir.name)
