"""One real `tune` of the DataLoader-starved job, shared by the tests that read what it leaves.

`tune --tensorboard` (test_tune_tensorboard.py) and `diff` of a trial's before and after run
folders (test_diff.py) read the same kind of tune: a baseline and one workers trial of
`starved_options`, about two minutes on 2 cores. It runs once; the tests that use it carry the
`xdist_group` mark below, so `pytest -n 2 --dist loadgroup` gives them to one worker.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import RULES_DIR
from tests.tuning.running import QUICK, job
from torchtop.diagnosis.rules import load_rules
from torchtop.sessions.tune import TuneCommand, tune_session

TUNED = pytest.mark.xdist_group("tuned_starved")
"""The mark of every test that uses `tuned_starved`."""


@dataclass(frozen=True)
class Tuned:
    run_dir: Path
    report: Path
    written: Path


@pytest.fixture(scope="session")
def tuned_starved(tmp_path_factory: pytest.TempPathFactory) -> Tuned:
    """`tune --tensorboard --format json --report` of `starved_options`, one trial."""
    root = tmp_path_factory.mktemp("tuned_starved")
    tuned = Tuned(root / "run", root / "report.json", root / "torchtop.toml")
    options = TuneCommand(
        write=tuned.written, run_dir=tuned.run_dir, report=str(tuned.report), steps=QUICK.steps,
        warmup_steps=QUICK.warmup_steps, min_duration_s=QUICK.min_duration_s, max_trials=1,
        tensorboard="", output_format="json",
    )  # fmt: skip
    assert tune_session(job("starved_options"), options, load_rules(RULES_DIR)) == 0
    return tuned
