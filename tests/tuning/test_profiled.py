"""`tune` on a job that ends before its profiler window: it says so and profiles another run
early, so the diagnosis has a breakdown and a located fix, not "nothing to fix" (issue 19
item 8)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from tests.conftest import RULES_DIR
from tests.tuning.running import QUICK, job
from torchtop.diagnosis.rules import load_rules
from torchtop.runs.state import load_run
from torchtop.tuning.tune import PROFILED_FOLDER, tune

pytestmark = pytest.mark.slow
TREE = load_rules(RULES_DIR)


def test_tune_on_a_job_that_ends_before_its_window_profiles_it_early_and_finds_the_verdict(
    tmp_path: Path,
) -> None:
    said: list[str] = []
    options = replace(QUICK, max_trials=0)
    result = tune(job("ends_at_request"), options, TREE, tmp_path / "run", on_event=said.append)
    assert not result.baseline.has_window, "the premise: the measured run ended first"
    assert any("the baseline gave no profiler window" in line for line in said), said
    report = result.report
    assert report is not None
    assert report.job.infos, "the diagnosis has a profiler window's breakdown"
    assert report.paths == (str(tmp_path / "run" / PROFILED_FOLDER),)
    assert report.verdict.bottleneck == "cpu", report.verdict.reason
    assert "names nothing to fix" not in result.stopped_because
    assert [f for finding in report.verdict.findings for f in finding.fixes]
    # Its stacks were sampled once it stepped, as `run` samples them, to locate code fixes.
    state = load_run(tmp_path / "run" / PROFILED_FOLDER)
    started = state.training_processes[0].steps[0].t - state.training_processes[0].steps[0].wall_s
    assert any(r.t >= started for r in state.samples.stacks)
