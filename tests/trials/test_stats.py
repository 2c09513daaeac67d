"""The statistics written out agree with the textbook: Student's t (quantiles, p-values), the
interval over a trial's rounds, and Mann-Whitney's U."""

from __future__ import annotations

import math

import pytest

from torchtop.trials.stats import estimate_rounds, mann_whitney_p, t_quantile, t_two_sided_p


def test_two_samples_that_do_not_overlap_give_the_textbook_p_value() -> None:
    # U = 0 for 5 against 5: z = (12.5 - 0.5) / sqrt(25 * 11 / 12), p = 0.01219 (two-sided,
    # continuity-corrected normal approximation; scipy's mannwhitneyu(method="asymptotic")).
    assert mann_whitney_p([1, 2, 3, 4, 5], [6, 7, 8, 9, 10]) == pytest.approx(0.012186, abs=1e-5)


def test_the_p_value_is_the_same_whichever_sample_comes_first() -> None:
    a, b = [0.10, 0.12, 0.11, 0.13, 0.09, 0.14], [0.08, 0.07, 0.09, 0.10, 0.06]
    assert mann_whitney_p(a, b) == pytest.approx(mann_whitney_p(b, a))


def test_identical_samples_show_no_difference() -> None:
    assert mann_whitney_p([0.1] * 10, [0.1] * 10) == 1.0
    assert mann_whitney_p([1, 2, 3], [1, 2, 3]) == pytest.approx(1.0)


def test_ties_across_samples_are_ranked_by_their_average() -> None:
    # Tie-corrected variance: 4 * 4 / 12 * (9 - (8^3 - 8 ... )) has one tie group of 2 here.
    p = mann_whitney_p([1, 2, 3, 4], [4, 5, 6, 7])
    assert 0.02 < p < 0.06


def test_an_empty_sample_is_no_evidence() -> None:
    assert mann_whitney_p([], [1.0]) == 1.0
    assert math.isfinite(mann_whitney_p([1.0], [2.0]))


@pytest.mark.parametrize(
    ("p", "df", "table"),
    [(0.975, 1, 12.7062), (0.975, 2, 4.3027), (0.975, 5, 2.5706), (0.975, 30, 2.0423),
     (0.995, 1, 63.6567), (0.995, 3, 5.8409), (0.95, 10, 1.8125)],
)  # fmt: skip
def test_the_t_quantiles_are_those_of_the_printed_tables(p: float, df: int, table: float) -> None:
    assert t_quantile(p, df) == pytest.approx(table, abs=1e-3)


def test_the_t_tests_p_value_is_the_tables() -> None:
    assert t_two_sided_p(2.228138852, 10) == pytest.approx(0.05, abs=1e-6)
    assert t_two_sided_p(0.0, 4) == pytest.approx(1.0)


def test_the_interval_over_known_rounds_is_students_t_on_their_log_ratios() -> None:
    # log-ratios 0.1, 0.2, 0.3: mean 0.2, sd 0.1, standard error 0.1 / sqrt(3), t(0.975, 2).
    ratios = [math.exp(0.1), math.exp(0.2), math.exp(0.3)]
    estimate = estimate_rounds(ratios, confidence=0.95)
    reach = 4.302653 * 0.1 / math.sqrt(3)
    assert estimate.speedup == pytest.approx(math.exp(0.2))
    assert estimate.low == pytest.approx(math.exp(0.2 - reach))
    assert estimate.high == pytest.approx(math.exp(0.2 + reach))
    assert estimate.rounds == 3 and estimate.confidence == 0.95
    # t = 0.2 / (0.1 / sqrt 3) = 3.4641 on 2 degrees of freedom: p = 0.0742.
    assert estimate.p_value == pytest.approx(0.0742, abs=1e-4)


def test_one_round_has_no_interval_and_every_round_alike_a_point() -> None:
    single = estimate_rounds([1.5], confidence=0.99)
    assert single.low is None and single.high is None and single.p_value is None
    same = estimate_rounds([2.0, 2.0, 2.0], confidence=0.99)
    assert same.low == pytest.approx(2.0) and same.high == pytest.approx(2.0)
    assert same.p_value == 0.0


def test_a_round_ratio_that_is_not_positive_is_refused() -> None:
    with pytest.raises(ValueError, match="must be positive"):
        estimate_rounds([1.0, 0.0], confidence=0.99)
