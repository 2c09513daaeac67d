"""One decision rule for `tune` and the dashboard's trial, its outcome named alike everywhere.

Issue 31's cases: a nanoGPT trial ended "reverted: measured 3.18x (0.57-17.81x, 6 rounds), no
measurable effect" with all six rounds favouring the fix (inconclusive, not "no effect"); the
dashboard said "not decided" at 6.43x (3.57-11.60x) where `tune` kept a like interval at once.
The rounds go through the trial's own decision step (`trials.trial._decide`) with the settings
each surface uses, and the trial they make is shown by each surface's own code."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import msgspec
import pytest

from tests.trials.test_decision import ratios_with, rounds_of
from torchtop.advice.plan import initial_plan
from torchtop.model.plan import AppliedFix
from torchtop.model.report import Report
from torchtop.model.trials import Trial, TrialOutcome
from torchtop.report import render_text, report_to_json
from torchtop.sessions.offline import analyze_paths
from torchtop.sessions.watched import dashboard_trial_settings
from torchtop.trials.decision import Decision, TrialSettings
from torchtop.trials.measure import Measurement
from torchtop.trials.trial import _decide, trial_entry
from torchtop.tui.widgets.trial import TrialView, outcome_word, trial_text
from torchtop.tuning.summary import _trial_line
from torchtop.tuning.tune import TuneOptions

SAMPLES = Path(__file__).resolve().parents[2] / "sample_traces"
WIDE = ratios_with(0.57, 17.81, rounds=6)
"""Six rounds, all above 1.0, whose 99% interval is 0.57-17.81x."""
SURE = ratios_with(3.57, 11.60, rounds=3)


def tune_settings() -> TrialSettings:
    return TuneOptions().trial_settings()


def dashboard_settings() -> TrialSettings:
    # `WatchedJob` holds `TuneOptions()` unless told otherwise.
    return dashboard_trial_settings(TuneOptions())


def decided(ratios: list[float], settings: TrialSettings) -> Decision | None:
    return _decide(rounds_of(ratios, run_s=18.0), settings, None, 1, lambda _: None)


def made(decision: Decision) -> Trial:
    """The trial `run_trial` makes of `decision` on runs with its rounds' ratios."""
    plan = initial_plan(["python", "train.py"], {}, "/work")
    fix = AppliedFix("dataloader.num_workers", 2, "override", "Load batches in 2 workers.")
    after = replace(plan, fixes=(fix,), changes=("dataloader.num_workers: 0 -> 2",))
    ratios = decision.estimate.ratios
    befores = tuple(Measurement(Path(f"b{k}"), (0.4,) * 10, 3) for k in range(len(ratios)))
    afters = tuple(Measurement(Path(f"a{k}"), (0.4 / r,) * 10, 3) for k, r in enumerate(ratios))
    return Trial(
        number=1,
        fixes=(fix,),
        kept=decision.kept,
        reason=decision.reason,
        before=befores,
        after=afters,
        p_value=decision.estimate.p_value,
        plan_before=plan,
        plan_after=after,
        duration_s=216.0,
        estimate=decision.estimate,
        effect=decision.effect,
        more_rounds=decision.more_rounds,
        decides_with=decision.decides_with,
    )


def test_the_dashboard_and_tune_decide_by_the_same_settings() -> None:
    assert replace(dashboard_settings(), capture_output=True) == replace(
        tune_settings(), capture_output=True
    )


@pytest.mark.parametrize("ratios", [WIDE, SURE, [1.01, 1.00, 1.02, 1.01], [0.5, 0.52, 0.47]])
def test_the_dashboard_and_tune_reach_the_same_decision_on_the_same_rounds(
    ratios: list[float],
) -> None:
    for count in range(1, len(ratios) + 1):
        tune = decided(ratios[:count], tune_settings())
        dashboard = decided(ratios[:count], dashboard_settings())
        assert tune == dashboard


def test_six_rounds_all_favouring_the_fix_at_0_57_to_17_81x_read_inconclusive_everywhere() -> None:
    assert all(r > 1.0 for r in WIDE)
    decision = decided(WIDE, tune_settings())
    assert decision is not None and decision.effect == "inconclusive" and not decision.kept
    trial = made(decision)
    interval = "99% interval 0.57-17.81x"

    tune_line = _trial_line(trial)
    assert ": inconclusive: reverted (inconclusive: 3.19x, " in tune_line
    assert interval in tune_line and "6 of 6 rounds favoured the fix" in tune_line

    view = TrialView("dataloader.num_workers: 0 -> 2").finished(
        TrialOutcome(trial, trial.plan_before, Path("run/jobs/02"))
    )
    assert view.outcome is not None and outcome_word(view.outcome) == "inconclusive: reverted"
    panel = trial_text(view).plain
    assert "inconclusive: reverted (6 of 6 rounds favoured the fix; about " in panel
    assert "would decide it at this spread)" in panel and interval in panel

    for said in (tune_line, panel):
        assert "no measurable effect" not in said and "not decided" not in said


def test_the_reports_trials_say_the_outcome_its_interval_and_the_rounds_favouring() -> None:
    decision = decided(WIDE, tune_settings())
    assert decision is not None
    entry = trial_entry(made(decision), with_steps=False)
    report: Report = msgspec.structs.replace(
        analyze_paths([str(SAMPLES / "dataloader_starved")]), trials=(entry,)
    )
    (written,) = report_to_json(report)["trials"]
    assert written["outcome"] == "inconclusive" and written["kept"] is False
    interval = written["interval"]
    assert interval["text"] == "99% interval 0.57-17.81x" and interval["confidence"] == 0.99
    assert interval["low"] == pytest.approx(0.57, abs=0.005)
    assert interval["high"] == pytest.approx(17.81, abs=0.005)
    assert written["rounds_favouring"] == 6 and written["rounds"] == 6
    assert written["more_rounds"] == decision.more_rounds
    text = render_text(report)
    assert "inconclusive: reverted" in text and "(99% interval 0.57-17.81x, 6 rounds)" in text
    assert "6 of 6 rounds favoured the fix" in text


def test_a_fix_faster_beyond_noise_is_kept_at_once_on_both_surfaces() -> None:
    tune = decided(SURE, tune_settings())
    assert tune is not None and tune.kept and tune.estimate.rounds == 3
    view = TrialView("dataloader.num_workers: 0 -> 2").finished(
        TrialOutcome(made(tune), made(tune).plan_after, Path("run/jobs/02"))
    )
    assert view.outcome is not None and outcome_word(view.outcome) == "faster: kept"
    assert trial_text(view).plain.endswith(
        "faster: kept: measured 6.44x (99% interval 3.57-11.60x, 3 rounds); the job now runs "
        "with the fix"
    )
    assert ": faster: kept (faster beyond noise: 6.44x, 99% interval 3.57-11.60x" in _trial_line(
        made(tune)
    )


def test_a_load_that_moved_under_the_runs_is_said_on_every_surface() -> None:
    decision = decided(WIDE, tune_settings())
    assert decision is not None
    moved = "the machine's other load rose from 0.1 to 1.9 cores during round 3"
    trial = replace(made(decision), load_change=f"{moved}: the rounds may not compare")
    assert f"\n  note: {moved}" in _trial_line(trial)
    view = TrialView("dataloader.num_workers: 0 -> 2").finished(
        TrialOutcome(trial, trial.plan_before, Path("run/jobs/02"))
    )
    assert moved in trial_text(view).plain
    entry = trial_entry(trial, with_steps=False)
    assert entry.load_change is not None and entry.load_change.startswith(moved)
    report: Report = msgspec.structs.replace(
        analyze_paths([str(SAMPLES / "dataloader_starved")]), trials=(entry,)
    )
    assert f"     note: {moved}" in render_text(report)
