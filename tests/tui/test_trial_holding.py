"""The trial panel after a kept fix: the relaunched job's figures beside the trial's claim, the
warning when it falls short, and the revert. Views built from real values (a `Trial`, a
`Holding` judged by `check_holding`), drawn as the panel draws them."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from tests.report.test_trials import trial
from torchtop.model.trials import RevertOutcome, TrialOutcome
from torchtop.trials.holding import HoldingTest, TrialClaim, check_holding
from torchtop.trials.tracked import claim_of
from torchtop.tui.revert import holding_line, revert_text
from torchtop.tui.widgets.trial import TrialView, trial_text

SPANS = HoldingTest(warmup_steps=0, recent_steps=10, recent_s=0.5)
KEPT = trial(True, 0.2, 0.1)  # 5 -> 10 steps/s: 2.00x


def kept_view() -> TrialView:
    outcome = TrialOutcome(KEPT, KEPT.plan_after, Path("run/jobs/01"))
    return TrialView("option --num-workers: 0 -> 2").finished(outcome)


def judged(walls_s: list[float], claim: TrialClaim | None = None) -> TrialView:
    return kept_view().tracked(check_holding(walls_s, claim or claim_of(KEPT), SPANS))


def test_a_fix_that_holds_shows_what_the_trial_said_beside_the_job_since() -> None:
    view = judged([0.1] * 30 + [0.105] * 10)  # 40 steps in 4.05 s: 9.88 steps/s, 1.98x
    lines = trial_text(view).plain.splitlines()
    assert len(lines) == 4 and lines[2].startswith("faster: kept: measured 2.00x")
    assert lines[3] == (
        "holds · trial said 2.00x (10.0 steps/s), since relaunch 1.98x (9.9 steps/s over 40 steps)"
    )
    assert not view.falls_short


def test_a_fix_that_falls_short_warns_first_and_offers_r() -> None:
    view = judged([0.1] * 20 + [0.14] * 20)  # 7.1 steps/s: short of 10, above the 5 before
    last = trial_text(view).plain.splitlines()[-1]
    assert view.falls_short and not view.gain_gone
    assert last.startswith("⚠ no longer holds · r: revert · trial said 2.00x")


def test_a_fix_whose_gain_has_gone_says_so_first_and_offers_r() -> None:
    view = judged([0.1] * 20 + [0.2] * 20)  # back at the 5 steps/s before the fix
    last = trial_text(view).plain.splitlines()[-1]
    assert view.falls_short and view.gain_gone
    assert last.startswith(
        "⚠ no longer holds: no faster than before the fix · r: revert · trial said 2.00x"
    )


def test_after_the_revert_the_figures_it_was_made_on_stay_and_new_ones_are_ignored() -> None:
    short = judged([0.1] * 20 + [0.3] * 20)
    assert short.holding is not None
    outcome = RevertOutcome(KEPT, KEPT.plan_before, Path("run/jobs/02"), short.holding)
    view = short.reverted(outcome).tracked(check_holding([0.1] * 40, claim_of(KEPT), SPANS))
    assert view.holding is short.holding
    lines = trial_text(view).plain.splitlines()
    # The trial's outcome, not a revert step.
    assert lines[2].startswith("faster: kept: measured 2.00x")
    assert lines[3].startswith("reverted by you: the job runs without the fix again (trial said")


def test_a_reverted_trial_is_not_followed() -> None:
    outcome = TrialOutcome(trial(False, 0.2, 0.2), KEPT.plan_before, Path("run/jobs/01"))
    view = TrialView("x").finished(outcome)
    assert view.tracked(check_holding([0.1] * 40, claim_of(KEPT), SPANS)).holding is None


def test_the_revert_modal_says_what_it_takes_back_and_the_command_it_runs() -> None:
    holding = check_holding([0.1] * 20 + [0.3] * 20, claim_of(KEPT), SPANS)
    text = revert_text(KEPT, holding).plain
    assert text.startswith(holding_line(holding) + "\n" + holding.reason)
    assert "take back: " in text
    assert "old command: python train.py --num-workers 2\nnew command: python train.py\n" in text


def test_the_finished_trial_shows_the_predicted_bound_beside_the_measured_speedup() -> None:
    predicted = dataclasses.replace(KEPT, predicted_gain=2.5)
    shown = TrialView("option --num-workers: 0 -> 2").finished(
        TrialOutcome(predicted, predicted.plan_after, Path("run/jobs/01"))
    )
    line = trial_text(shown).plain.splitlines()[1]
    assert "2.00x · predicted 2.50x" in line
    assert "predicted" not in trial_text(kept_view()).plain  # no prediction: none is shown
