"""IntervalSet against a brute-force reference: sets of unit cells on a small integer line.

hypothesis is not installed, so random cases come from a seeded generator: the same cases on
every run, thousands of them, including empty, touching, nested and duplicate intervals.
"""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest

from torchtop.analysis import intervals
from torchtop.analysis.intervals import IntervalSet

LINE = 40
CASES = 1500


def random_intervals(rng: random.Random) -> list[tuple[int, int]]:
    count = rng.choice([0, 1, 2, 3, 5, 8, 12])
    spans = []
    for _ in range(count):
        a, b = rng.randrange(LINE), rng.randrange(LINE)
        spans.append((min(a, b), max(a, b)))  # may be empty (a == b)
    return spans


def build(spans: list[tuple[int, int]]) -> IntervalSet:
    start = np.array([s for s, _ in spans], dtype=np.float64)
    end = np.array([e for _, e in spans], dtype=np.float64)
    return IntervalSet.of(start, end)


def cells(spans: list[tuple[int, int]]) -> set[int]:
    """The reference: which unit cells [t, t+1) the intervals cover."""
    return {t for s, e in spans for t in range(s, e)}


def cells_of(interval_set: IntervalSet) -> set[int]:
    covered = set()
    for s, e in zip(interval_set.start.tolist(), interval_set.end.tolist(), strict=True):
        assert s == int(s) and e == int(e)
        covered |= set(range(int(s), int(e)))
    return covered


def assert_canonical(interval_set: IntervalSet) -> None:
    """Sorted, non-empty, disjoint and not touching (touching intervals merge)."""
    start, end = interval_set.start, interval_set.end
    assert len(start) == len(end)
    assert np.all(end > start)
    assert np.all(start[1:] > end[:-1])


def case_pairs() -> list[tuple[list[tuple[int, int]], list[tuple[int, int]]]]:
    rng = random.Random(20240611)
    return [(random_intervals(rng), random_intervals(rng)) for _ in range(CASES)]


PAIRS = case_pairs()


def test_the_random_cases_include_the_edge_cases() -> None:
    flat = [spans for pair in PAIRS for spans in pair]
    assert any(not spans for spans in flat)
    assert any(any(s == e for s, e in spans) for spans in flat)
    assert any(len(build(spans)) < len({x for x in spans if x[0] < x[1]}) for spans in flat)


def test_of_merges_overlapping_and_touching_intervals_into_the_same_cells() -> None:
    for a, _ in PAIRS:
        merged = build(a)
        assert_canonical(merged)
        assert cells_of(merged) == cells(a)
        assert merged.total() == len(cells(a))


def test_union_matches_the_reference() -> None:
    for a, b in PAIRS:
        result = build(a).union(build(b))
        assert_canonical(result)
        assert cells_of(result) == cells(a) | cells(b)


def test_intersect_matches_the_reference() -> None:
    for a, b in PAIRS:
        result = build(a).intersect(build(b))
        assert_canonical(result)
        assert cells_of(result) == cells(a) & cells(b)


def test_subtract_matches_the_reference() -> None:
    for a, b in PAIRS:
        result = build(a).subtract(build(b))
        assert_canonical(result)
        assert cells_of(result) == cells(a) - cells(b)


def test_covered_within_matches_the_reference_for_every_window() -> None:
    rng = random.Random(7)
    for a, _ in PAIRS:
        reference = cells(a)
        windows = [
            sorted((rng.randrange(-3, LINE + 3), rng.randrange(-3, LINE + 3))) for _ in range(6)
        ]
        lo = np.array([w[0] for w in windows], dtype=np.float64)
        hi = np.array([w[1] for w in windows], dtype=np.float64)
        covered = build(a).covered_within(lo, hi)
        expected = [len([t for t in reference if w[0] <= t < w[1]]) for w in windows]
        assert covered.tolist() == expected


def test_contains_matches_the_reference_for_half_open_intervals() -> None:
    points = np.arange(-2, LINE + 2, 0.5)
    for a, _ in PAIRS[:300]:
        inside = build(a).contains(points.copy())
        expected = [any(s <= p < e for s, e in a) for p in points.tolist()]
        assert inside.tolist() == expected


def test_set_identities_hold() -> None:
    for a, b in PAIRS[:500]:
        x, y = build(a), build(b)
        # |A ∪ B| = |A| + |B| - |A ∩ B|, and A = (A - B) ∪ (A ∩ B) with the two parts disjoint.
        assert x.union(y).total() == x.total() + y.total() - x.intersect(y).total()
        assert x.subtract(y).total() + x.intersect(y).total() == x.total()
        assert x.subtract(y).intersect(y).total() == 0


@pytest.mark.parametrize(
    ("spans", "expected"),
    [
        ([(0, 2), (2, 4)], [(0, 4)]),  # touching intervals merge, as tb-profiler merges them
        ([(5, 9), (0, 3), (1, 2)], [(0, 3), (5, 9)]),  # unsorted, nested
        ([(3, 3), (4, 1)], []),  # empty and reversed intervals vanish
    ],
)
def test_of_normalises_small_examples(
    spans: list[tuple[int, int]], expected: list[tuple[int, int]]
) -> None:
    result = build(spans)
    assert list(zip(result.start.tolist(), result.end.tolist(), strict=True)) == expected


def test_fractional_boundaries_are_exact() -> None:
    a = IntervalSet.of(np.array([0.25, 1.5]), np.array([1.0, 2.125]))
    b = IntervalSet.of(np.array([0.5]), np.array([1.75]))
    assert a.intersect(b).total() == pytest.approx(0.75)
    assert a.subtract(b).total() == pytest.approx(0.25 + 0.375)
    assert a.covered_within(np.array([0.0]), np.array([1.6])).tolist() == pytest.approx([0.85])


@pytest.mark.parametrize("block", [1, 3, 1000])
def test_merged_block_by_block_the_set_is_the_same_to_the_last_bit(
    monkeypatch: pytest.MonkeyPatch, block: int
) -> None:
    """Nested, overlapping and touching float intervals over several threads' ops, some left
    out by a mask: merged in blocks, then the blocks together, against all at once."""
    rng = np.random.default_rng(7)
    start = np.round(rng.uniform(0, 50_000, 20_000), 3)
    end = start + np.round(rng.exponential(0.4, 20_000), 3)  # some empty (rounded to 0)
    end[::97] = start[::97]
    start[-500:] = end[:500]  # each touching an earlier one, far away in the arrays
    end[-500:] = start[-500:] + 0.25
    where = rng.random(20_000) < 0.7
    whole = [IntervalSet.of(start, end), IntervalSet.of(start, end, where)]
    before = (start.copy(), end.copy())
    monkeypatch.setattr(intervals, "BLOCK", block)
    blocked = [IntervalSet.of(start, end), IntervalSet.of(start, end, where)]
    for one, other in zip(whole, blocked, strict=True):
        assert one.start.tobytes() == other.start.tobytes()
        assert one.end.tobytes() == other.end.tobytes()
    assert 100 < len(whole[1]) < len(whole[0]) < 20_000
    assert start.tobytes() == before[0].tobytes() and end.tobytes() == before[1].tobytes()


@pytest.mark.parametrize("block", [2, 1000])
def test_a_mask_selects_the_same_intervals_as_indexing_would(
    monkeypatch: pytest.MonkeyPatch, block: int
) -> None:
    monkeypatch.setattr(intervals, "BLOCK", block)
    for a, _ in PAIRS[:300]:
        start = np.array([s for s, _ in a], dtype=np.float64)
        end = np.array([e for _, e in a], dtype=np.float64)
        where = np.arange(len(a)) % 2 == 0
        chosen = IntervalSet.of(start, end, where)
        assert cells_of(chosen) == cells([span for i, span in enumerate(a) if i % 2 == 0])
        assert_canonical(chosen) if len(chosen) else None


@pytest.mark.parametrize("block", [1, 7, 1000])
def test_intersected_a_block_of_pieces_at_a_time_the_set_is_the_same_to_the_last_bit(
    monkeypatch: pytest.MonkeyPatch, block: int
) -> None:
    """A few long windows (steps) against many short intervals (kernels), and the other way
    round, and two fine sets: in blocks of pieces, against all the pieces at once."""
    rng = np.random.default_rng(11)
    kernels = IntervalSet.of(*_random_spans(rng, 20_000, 0.3))
    steps = IntervalSet.of(np.arange(0.0, 50_000, 5_000.5), np.arange(4_000.25, 54_000, 5_000.5))
    runtime = IntervalSet.of(*_random_spans(rng, 15_000, 0.6))
    pairs = [(steps, kernels), (kernels, steps), (kernels, runtime), (steps, kernels.complement())]
    whole = [a.intersect(b) for a, b in pairs]
    monkeypatch.setattr(intervals, "BLOCK", block)
    for (a, b), one in zip(pairs, whole, strict=True):
        other = a.intersect(b)
        assert one.start.tobytes() == other.start.tobytes()
        assert one.end.tobytes() == other.end.tobytes()
        assert_canonical(other)
    assert all(len(one) > 1000 for one in whole)
    for left, right in PAIRS[:300]:
        result = build(left).intersect(build(right))
        assert_canonical(result) if len(result) else None
        assert cells_of(result) == cells(left) & cells(right)


def _random_spans(rng: np.random.Generator, count: int, mean_us: float) -> tuple[Any, Any]:
    start = np.round(rng.uniform(0, 50_000, count), 3)
    return start, start + np.round(rng.exponential(mean_us, count), 3)


@pytest.mark.parametrize("block", [3, 1000, 1 << 20])
def test_intervals_listed_in_time_order_merge_to_the_set_a_shuffle_of_them_does(
    monkeypatch: pytest.MonkeyPatch, block: int
) -> None:
    """The sort is skipped for spans already in order (as a trace lists a stream's kernels):
    the same set, and the caller's arrays left as they were."""
    rng = np.random.default_rng(5)
    start, end = _random_spans(rng, 20_000, 0.5)
    order = np.argsort(start, kind="stable")
    start, end = start[order], end[order] + 0.001  # none empty: nothing is copied out first
    shuffled = rng.permutation(len(start))
    monkeypatch.setattr(intervals, "BLOCK", block)
    before = (start.tobytes(), end.tobytes())
    in_order = IntervalSet.of(start, end)
    assert (start.tobytes(), end.tobytes()) == before
    mixed = IntervalSet.of(start[shuffled], end[shuffled])
    assert in_order.start.tobytes() == mixed.start.tobytes()
    assert in_order.end.tobytes() == mixed.end.tobytes()
    assert 1000 < len(in_order) < 20_000
