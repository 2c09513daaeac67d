"""`tune` plans its budget: trial runs sized in steps from the baseline to fit `--for`, or, where
not even one trial fits, said so before any of the budget is spent on it, with the `--for` that
would try the top fix (issue 31: nanoGPT's `tune --for 300` stopped after a 91 s baseline with
210 s unused, "another trial would overrun", and never said what budget would have tried it).

The planner is a pure function, tested on the figures of a real baseline of the issue's job
(`tests/workloads/slow_start.py`: 20 s of start-up, ~3 s steps waiting on a DataLoader with no
workers; measured by `torchtop tune --for 300` on this machine, see docs/tune.md), and end to
end on a quicker job of the same shape with a budget too short for one trial."""

from __future__ import annotations

import dataclasses
import re
import time
from pathlib import Path

import pytest

from tests.conftest import RULES_DIR
from tests.tuning.running import QUICK, job
from torchtop.diagnosis.rules import load_rules
from torchtop.tuning.budget import MIN_STEPS, JobCosts, plan_trial, warmup_s
from torchtop.tuning.tune import TuneOptions, tune

TREE = load_rules(RULES_DIR)
FULL = TuneOptions().trial_settings().span(TuneOptions().steps, TuneOptions().warmup_steps)

# The issue's job as its real baseline measured it (`torchtop tune --for 300 -- python
# tests/workloads/slow_start.py`, this machine, 2026-11-29, run folder's `baseline`: 25.3 s from
# the launch to the first step (its 20 s, and the agent's start), 1.6 s to stop, 3.005 s steps,
# 27.1 s of profiler windows; tune had spent 147 s when it planned the trial).
BASELINE_ELAPSED_S = 147.0
SLOW_START = JobCosts(startup_s=25.3, stop_s=1.6, step_s=3.005, window_s=27.1)
FIX = "override dataloader.num_workers: 0 -> 64"


def test_a_steady_jobs_warmup_ends_at_the_time_cap_or_once_stationary() -> None:
    assert warmup_s(3.0, 8, FULL) == 24.0  # 8 steps of 3 s pass the 10 s cap
    assert warmup_s(3.0, 2, FULL) == 12.0  # 10 s capped at the next step's end
    assert warmup_s(0.1, 8, FULL) == pytest.approx(1.0)  # stationary after 10 steps


def test_the_issues_job_at_300_s_is_told_before_the_trial_the_for_that_would_try_it() -> None:
    plan = plan_trial(SLOW_START, BASELINE_ELAPSED_S, 300.0, FULL, runs=5)
    assert plan.size is None
    said = plan.too_short(FIX, 300.0)
    needed = int(re.findall(r"--for (\d+) would try it", said)[0])
    assert needed == plan.needed_budget_s >= BASELINE_ELAPSED_S + plan.smallest.trial_s
    assert 300 < needed <= 450, said
    assert re.search(r"and 153 s are left: --for \d+ would try it$", said), said
    assert said.startswith(
        f"another trial would overrun the time budget of 300 s: one trial of {FIX}"
    )
    assert (
        "(5 runs of about 48 s, each of 5 measured steps after a warm-up of 2, and 20% more" in said
    )


def test_with_that_for_the_trial_is_sized_down_in_steps_to_fit() -> None:
    needed = plan_trial(SLOW_START, BASELINE_ELAPSED_S, 300.0, FULL, runs=5).needed_budget_s
    size = plan_trial(SLOW_START, BASELINE_ELAPSED_S, needed, FULL, runs=5).size
    assert size is not None
    # Not the full size (5 runs of 105 s and the windows would end near 800 s): the runs it
    # decides on end within the budget, their windows left out.
    assert MIN_STEPS <= size.steps < FULL.steps and not size.window_after
    assert size.warmup_steps < FULL.warmup_steps and size.max_warmup_s < FULL.max_warmup_s
    assert BASELINE_ELAPSED_S + size.trial_s <= needed
    # With the budget to spare, the full size, its windows too.
    roomy = plan_trial(SLOW_START, BASELINE_ELAPSED_S, 900.0, FULL, runs=5).size
    assert roomy is not None and roomy.steps == FULL.steps and roomy.window_after


@pytest.mark.slow
def test_a_budget_too_short_for_one_trial_says_how_long_one_needs_before_spending_it(
    tmp_path: Path,
) -> None:
    """A job slow to start (3 s) whose steps wait on its DataLoader: its baseline fits the
    budget, one trial of the DataLoader fix does not; tune says so and stops well before the
    budget, having started no trial run."""
    budget_s = 40.0
    options = dataclasses.replace(QUICK, budget_s=budget_s)
    events: list[str] = []
    started = time.monotonic()
    command = job("slow_start", "--startup-s", "3", "--sample-sleep-ms", "40")
    result = tune(command, options, TREE, tmp_path / "run", on_event=events.append)
    elapsed_s = time.monotonic() - started
    said = result.stopped_because
    assert result.trials == (), said
    assert said.startswith("another trial would overrun the time budget of 40 s: one trial of ")
    assert "dataloader.num_workers" in said, said
    needed = int(re.findall(r"--for (\d+) would try it", said)[0])
    assert needed > budget_s
    assert f"no trial: {said}" in events
    # Said before the budget was spent, and no run of a trial was started.
    assert elapsed_s < budget_s, elapsed_s
    assert not any((tmp_path / "run" / "trials").glob("*/*"))
