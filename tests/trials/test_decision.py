"""Keep, revert, or measure another round: the trial's decision on its rounds' ratios.

The issue's figures are the cases: the same do-nothing change measured 1.09x, 0.86x, 1.53x and
1.12x, and a DataLoader fix whose long runs measure 8.4-8.5x claimed 7.81-10.86x."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from torchtop.model.rounds import FASTER, NO_EFFECT, SLOWER
from torchtop.model.trials import Stage, TrialEvent
from torchtop.trials.decision import TrialSettings, decide
from torchtop.trials.measure import Measurement
from torchtop.trials.trial import _decide, _Rounds

SETTINGS = TrialSettings(min_gain=0.05)
DO_NOTHING = [1.09, 0.86, 1.53, 1.12, 0.95, 1.20]
"""A do-nothing change's rounds with a large round-to-round spread (the issue's four, and two
more alike)."""


def test_a_do_nothing_change_with_a_large_spread_is_not_kept_nor_beyond_noise() -> None:
    for rounds in range(2, SETTINGS.max_rounds):
        assert decide(DO_NOTHING[:rounds], SETTINGS, final=False) is None
    decision = decide(DO_NOTHING, SETTINGS, final=True)
    assert decision is not None and not decision.kept
    assert decision.effect == NO_EFFECT
    assert decision.reason.startswith("no measurable effect: 1.11x, 99% interval 0.8")
    assert "beyond noise" not in decision.reason.split(":")[0]
    assert decision.reason.endswith("reverted")
    assert decision.estimate.low is not None and decision.estimate.low < 1.0


def test_a_stable_8x_fix_is_kept_with_an_interval_containing_8x() -> None:
    ratios = [7.9, 8.1, 8.0]
    assert decide(ratios[:2], SETTINGS, final=False) is None  # t on 1 degree: 63.7 wide
    decision = decide(ratios, SETTINGS, final=False)
    assert decision is not None and decision.kept and decision.effect == FASTER
    estimate = decision.estimate
    assert estimate.low is not None and estimate.high is not None
    assert estimate.low < 8.0 < estimate.high
    assert estimate.speedup == pytest.approx(8.0, abs=0.01)
    assert estimate.half_width is not None and estimate.half_width <= SETTINGS.precision
    assert decision.reason == (
        "faster beyond noise: 8.00x, 99% interval 7.45-8.59x over 3 rounds (7.90x, 8.10x, 8.00x)"
    )


def test_the_issues_four_claims_of_one_fix_are_kept_with_an_interval_holding_its_long_run() -> None:
    claims = [8.66, 10.86, 7.81, 8.92]
    assert decide(claims, SETTINGS, final=False) is None  # faster, but too wide to state yet
    decision = decide(claims, SETTINGS, final=True)
    assert decision is not None and decision.kept
    assert decision.estimate.low is not None and decision.estimate.high is not None
    assert decision.estimate.low < 8.45 < decision.estimate.high


def test_a_kept_fix_whose_interval_is_wide_is_measured_on_until_the_cap() -> None:
    ratios = [2.0, 2.6, 2.3, 2.2]  # faster beyond noise, but 37% either side
    assert decide(ratios, SETTINGS, final=False) is None
    decision = decide(ratios, SETTINGS, final=True)
    assert decision is not None and decision.kept


def test_a_fix_that_halves_the_speed_is_reverted_once_the_interval_says_so() -> None:
    assert decide([0.5], SETTINGS, final=False) is None  # one round has no spread
    decision = decide([0.5, 0.52, 0.47], SETTINGS, final=False)
    assert decision is not None and not decision.kept and decision.effect == SLOWER
    assert decision.reason.startswith("slower beyond noise: 0.50x")


def test_a_change_whose_interval_holds_no_worthwhile_gain_is_reverted_early() -> None:
    decision = decide([1.01, 1.00, 1.02, 1.01], SETTINGS, final=False)
    assert decision is not None and not decision.kept and decision.effect == NO_EFFECT
    assert "no gain of 5% in it" in decision.reason


def test_one_round_is_never_kept_however_large() -> None:
    decision = decide([7.0], SETTINGS, final=True)
    assert decision is not None and not decision.kept
    assert "too few rounds" in decision.reason


def rounds_of(ratios: list[float], run_s: float) -> _Rounds:
    """Measured rounds whose after/before rates have `ratios`, each run taking `run_s`."""
    made = _Rounds()
    for k, ratio in enumerate(ratios):
        made.befores.append(Measurement(Path(f"b{k}"), (0.1,) * 20, 3))
        made.afters.append(Measurement(Path(f"a{k}"), (0.1 / ratio,) * 20, 3))
        made.run_s += [run_s, run_s]
    return made


def test_no_round_starts_that_would_end_past_the_deadline() -> None:
    wide = rounds_of([1.4, 1.1], run_s=10.0)
    said: list[TrialEvent] = []
    # 30 s left: another round (two runs of 10 s) fits, so it is measured, and said.
    assert _decide(wide, SETTINGS, time.monotonic() + 30.0, 1, said.append) is None
    (stage,) = said
    assert isinstance(stage, Stage)
    assert stage.text.startswith("trial 1 round 2: 1.24x, 99% interval ")
    assert stage.text.endswith("another round (at most 4 more, about 20 s each)")
    # 15 s left: it does not fit, so the trial decides on the rounds it has.
    decision = _decide(wide, SETTINGS, time.monotonic() + 15.0, 1, said.append)
    assert decision is not None and not decision.kept and decision.effect == NO_EFFECT


def test_an_interval_too_wide_to_print_reads_as_its_bounds() -> None:
    decision = decide([0.89, 2.73], SETTINGS, final=False)  # 2 rounds at load 11: undecided
    assert decision is None
    wide = decide([0.89, 2.73], SETTINGS, final=True)
    assert wide is not None
    assert "99% interval <0.01->999x over 2 rounds (0.89x, 2.73x)" in wide.reason
