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

# The issue's job as its real baseline measured it (`tune --for 300`, this machine):
BASELINE_ELAPSED_S = 130.0
SLOW_START = JobCosts(startup_s=21.0, stop_s=0.6, step_s=3.0, window_s=33.0)


def test_a_steady_jobs_warmup_ends_at_the_time_cap_or_once_stationary() -> None:
    assert warmup_s(3.0, 8, FULL) == 24.0  # 8 steps of 3 s pass the 10 s cap
    assert warmup_s(3.0, 2, FULL) == 12.0  # 10 s capped at the next step's end
    assert warmup_s(0.1, 8, FULL) == pytest.approx(1.0)  # stationary after 10 steps


def test_the_issues_job_gets_a_trial_sized_to_the_time_left_after_its_baseline() -> None:
    plan = plan_trial(SLOW_START, BASELINE_ELAPSED_S, 300.0, FULL, runs=3)
    size = plan.size
    assert size is not None, plan.too_short("dataloader.num_workers: 0 -> 2", 300.0)
    # Not the full size (3 runs of 105 s and the windows would end at 478 s), but as many
    # steps as fit: the runs it decides on end within the budget.
    assert MIN_STEPS <= size.steps < FULL.steps and not size.window_after
    assert BASELINE_ELAPSED_S + size.trial_s <= 300.0
    # With the budget to spare, the full size, its windows too.
    roomy = plan_trial(SLOW_START, BASELINE_ELAPSED_S, 900.0, FULL, runs=3).size
    assert roomy is not None and roomy.steps == FULL.steps and roomy.window_after


def test_where_even_the_smallest_trial_cannot_fit_it_says_the_for_that_would_try_it() -> None:
    plan = plan_trial(SLOW_START, BASELINE_ELAPSED_S, 200.0, FULL, runs=3)
    assert plan.size is None
    said = plan.too_short("dataloader.num_workers: 0 -> 2", 200.0)
    needed = int(re.findall(r"--for (\d+) would try it", said)[0])
    assert needed == plan.needed_budget_s >= BASELINE_ELAPSED_S + plan.smallest.trial_s
    assert said.startswith("another trial would overrun the time budget of 200 s: one trial of ")
    # That budget does fit one trial.
    assert plan_trial(SLOW_START, BASELINE_ELAPSED_S, needed, FULL, runs=3).size is not None


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
