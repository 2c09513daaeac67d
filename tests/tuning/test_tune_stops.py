"""Why tune stopped, said as it was: findings that offer no fix for the job are named as such,
not reported as "no untried fix applies", which reads as if fixes had been tried (a 2-rank
nanoGPT: all-reduce not overlapped, with gradients too small for the bucket advice); after an
inconclusive trial, that the trial was inconclusive, first (it began "no untried fix applies (a
kept fix must gain at least 5%)", as if the fix had been measured without the gain)."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import pytest
from msgspec.structs import replace

from tests.conftest import RULES_DIR
from tests.trials.test_one_rule import decided, made, tune_settings
from tests.tuning.running import QUICK, job
from torchtop.diagnosis.rules import load_rules
from torchtop.sessions.offline import analyze_paths
from torchtop.tuning import tune

STARVED = Path(__file__).resolve().parents[2] / "sample_traces" / "dataloader_starved"
TREE = load_rules(RULES_DIR)


def test_findings_that_offer_no_fix_are_named_and_not_said_to_be_tried() -> None:
    report = analyze_paths([str(STARVED)], TREE)
    findings = report.verdict.findings
    assert findings and any(finding.fixes for finding in findings)
    assert tune._nothing_left(report, QUICK).startswith("no untried fix applies")

    bare = tuple(replace(finding, fixes=()) for finding in findings)
    without = replace(report, verdict=replace(report.verdict, findings=bare))
    said = tune._nothing_left(without, QUICK)
    named = ", ".join(finding.rule for finding in findings)
    assert said == f"the diagnosis ({named}) offers no fix for this job"


def test_after_an_inconclusive_trial_the_stop_says_the_trial_was_inconclusive_first() -> None:
    report = analyze_paths([str(STARVED)], TREE)
    decision = decided([2.0, 6.0, 1.5, 9.0, 17.0, 1.2], tune_settings())
    assert decision is not None and decision.effect == "inconclusive"
    said = tune._undecided(report, [made(decision)], QUICK)
    assert said.startswith("trial 1 (dataloader.num_workers: 0 -> 2) was inconclusive: "), said
    assert "shows neither the 5% gain a kept fix needs nor its absence; reverted" in said
    assert decision.decides_with and decision.decides_with in said
    assert said.endswith("; no other fix is left to try") and "no untried fix" not in said
    assert tune._undecided(report, [], QUICK) == tune._nothing_left(report, QUICK)


@pytest.mark.slow
def test_a_budget_spent_on_the_baseline_still_lists_the_users_own_changes_on_their_lines(
    tmp_path: Path,
) -> None:
    """Tune stopped by its budget before it looked at the fixes once showed no code change at
    all; and its baseline had no stacks, so a code change could not be put on a line."""
    env = {**os.environ, "STEPS": "1000000"}
    options = dataclasses.replace(QUICK, budget_s=1.0)
    result = tune.tune(job("copy_heavy"), options, TREE, tmp_path / "run", env=env)
    # tune looks at the fixes before it sizes a trial to the budget (`tuning.budget`): this
    # job's are all code changes, so no trial was possible whatever the budget, and it says so.
    said = result.stopped_because
    assert result.trials == () and said.startswith("no untried fix applies"), said
    code = [s for s in result.skipped if s.patch]
    assert code, result.report.verdict if result.report else "no report"
    assert any("copy_heavy.py:" in (s.patch or "") for s in code), [s.patch for s in code]
