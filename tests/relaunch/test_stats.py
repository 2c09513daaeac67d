"""Mann-Whitney's U test, written out, agrees with the textbook values."""

from __future__ import annotations

import math

import pytest

from torchtop.relaunch.stats import compare, mann_whitney_p


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


def test_the_speedup_is_steps_per_second_after_over_before() -> None:
    comparison = compare([0.2] * 10, [0.1] * 10)
    assert comparison.speedup == pytest.approx(2.0)
    assert comparison.faster(alpha=0.01, min_gain=0.05)
    assert not comparison.slower(alpha=0.01)


def test_an_empty_sample_is_no_evidence() -> None:
    assert mann_whitney_p([], [1.0]) == 1.0
    assert math.isfinite(mann_whitney_p([1.0], [2.0]))
