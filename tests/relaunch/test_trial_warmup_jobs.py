"""A real short trial of a workers fix: each run's warm-up knows its DataLoader's queue, every run
is measured over the minimum duration, and the trial keeps the fix's predicted gain beside its
measured speedup."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.relaunch.running import job
from torchtop.advice.machine import this_machine
from torchtop.advice.plan import initial_plan, plan_fix
from torchtop.model.findings import Fix
from torchtop.model.plan import LaunchPlan
from torchtop.relaunch.trial import TrialSettings, run_trial

pytestmark = pytest.mark.slow


def test_a_workers_fix_is_measured_past_its_queued_batches_with_its_predicted_gain(
    tmp_path: Path,
) -> None:
    before = initial_plan(job("starved_options"), os.environ, str(tmp_path))
    fix = Fix("dataloader.num_workers", 4, "override", "Load batches in 4 worker processes.")
    after = plan_fix(fix, before, {"dataloader": {"num_workers": 0}}, this_machine())
    assert isinstance(after, LaunchPlan)
    quick = TrialSettings(min_duration_s=1.5, max_rounds=1)
    run_root = tmp_path / "run"
    trial = run_trial(before, after, 8, 3, run_root, 60.0, settings=quick, predicted_gain=6.25)

    written = json.loads((tmp_path / "run" / "trials" / "01.json").read_text())
    assert written["kept"] is True and written["speedup"] > 1.5
    assert written["predicted_gain"] == 6.25
    assert written["measured_as"]["min_duration_s"] == 1.5  # one rule, for every run
    (measured_before,), (measured_after,) = written["runs"]["before"], written["runs"]["after"]
    assert measured_before["warmup"]["queued_batches"] == 0
    assert measured_after["warmup"]["queued_batches"] == 4 * 2  # workers * default prefetch
    assert measured_after["warmup"]["steps"] >= 8 and measured_before["warmup"]["steps"] >= 3
    for run in (measured_before, measured_after):
        assert run["warmup"]["ended_by"] in {"stationary", "step cap", "time cap"}
        assert run["duration_s"] >= 1.5 and run["steps"] >= 8
    # Measured by time: the faster variant ran more steps in its minimum duration.
    assert measured_after["steps"] > 1.5 * measured_before["steps"]
    assert trial.after[0].warmup is not None
    assert trial.after[0].warmup_steps == measured_after["warmup"]["steps"]
