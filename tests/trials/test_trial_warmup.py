"""A real short trial of a workers fix on a sleep-bound job: kept on its rounds' interval, each
run's warm-up knows its DataLoader's queue, every run is measured over the minimum duration,
and the trial keeps the fix's predicted gain beside its measured speedup."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import pytest

from tests.tuning.running import job
from torchtop.advice.machine import this_machine
from torchtop.advice.plan import initial_plan, plan_fix
from torchtop.model.findings import Fix
from torchtop.model.plan import LaunchPlan
from torchtop.model.trials import Measured, Stage, TrialEvent
from torchtop.runs.records import LoaderSettings, Settings
from torchtop.trials.trial import TrialSettings, run_trial

pytestmark = pytest.mark.slow


def test_a_workers_fix_is_kept_on_its_rounds_interval_measured_past_its_queued_batches(
    tmp_path: Path,
) -> None:
    # 10 ms a sample: sleep-bound enough that 4 workers pay about 4x whatever the machine's load
    # (at 3 ms, at load 13 on 2 cores, three rounds read 1.33x, 1.95x and 1.66x: undecided).
    command = job("starved_options", "--sample-sleep-ms", "10")
    before = initial_plan(command, os.environ, str(tmp_path))
    fix = Fix("dataloader.num_workers", 4, "override", "Load batches in 4 worker processes.")
    after = plan_fix(
        fix, before, Settings(dataloader=LoaderSettings(num_workers=0)), this_machine()
    )
    assert isinstance(after, LaunchPlan)
    quick = TrialSettings(min_duration_s=1.5, max_rounds=3)
    run_root = tmp_path / "run"
    events: list[TrialEvent] = []
    trial = run_trial(before, after, 8, 3, run_root, 60.0, settings=quick, predicted_gain=6.25,
                      on_event=events.append)  # fmt: skip

    written = json.loads((tmp_path / "run" / "trials" / "01.json").read_text())
    assert written["kept"] is True and written["effect"] == "faster", written["reason"]
    rounds = written["rounds"]
    assert 2 <= rounds <= 3 and len(written["round_ratios"]) == rounds
    assert len(written["runs"]["before"]) == len(written["runs"]["after"]) == rounds
    # The claim is the rounds' geometric mean, inside an interval whose lower bound is a gain.
    assert 1 + quick.min_gain < written["speedup_low"] < written["speedup"]
    assert written["speedup"] < written["speedup_high"] and written["confidence"] == 0.99
    geometric = math.prod(written["round_ratios"]) ** (1 / rounds)
    assert written["speedup"] == pytest.approx(geometric, rel=1e-3)
    ratios = [a["steps_per_s"] / b["steps_per_s"] for b, a in zip(
        written["runs"]["before"], written["runs"]["after"], strict=True)]  # fmt: skip
    assert written["round_ratios"] == pytest.approx(ratios, rel=1e-3)
    # Each undecided round is said, with the rounds left.
    stages = [e.text for e in events if isinstance(e, Stage)]
    assert len(stages) == rounds - 1
    assert all(s.startswith("trial 1 round ") and " more, about " in s for s in stages)
    assert written["predicted_gain"] == 6.25
    assert written["measured_as"]["min_duration_s"] == 1.5  # one rule, for every run
    measured_before, measured_after = written["runs"]["before"][0], written["runs"]["after"][0]
    assert measured_before["warmup"]["queued_batches"] == 0
    assert measured_after["warmup"]["queued_batches"] == 4 * 2  # workers * default prefetch
    assert measured_after["warmup"]["steps"] >= 8 and measured_before["warmup"]["steps"] >= 3
    for run in (*written["runs"]["before"], *written["runs"]["after"]):
        assert run["warmup"]["ended_by"] in {"stationary", "step cap", "time cap"}
        assert run["duration_s"] >= 1.5 and run["steps"] >= 8
    # Measured by time: the faster variant ran more steps in its minimum duration.
    assert measured_after["steps"] > 1.5 * measured_before["steps"]
    assert trial.after[0].warmup is not None
    assert trial.after[0].warmup_steps == measured_after["warmup"]["steps"]
    # Rounds alternate: before-1, after-1, then after-2 before before-2 (ABBA).
    labels = [e.label for e in events if isinstance(e, Measured)]
    assert labels[:4] == ["before-1", "after-1", "after-2", "before-2"]
