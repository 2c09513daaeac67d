"""`collectors.pace.Pace`: a fast start, then native chunks as long as the CPU budget needs.

The costs fed in are the two parts a `py-spy record --native` chunk is made of (symbols loaded
once a chunk, a cost per sample); `test_native_stacks.py` runs the pace on a real job.
"""

from __future__ import annotations

from torchtop.collectors.pace import MIN_RATE_PER_S, Pace


def run_chunks(
    pace: Pace, count: int, fixed_s: float, per_sample_s: float
) -> list[tuple[int, int]]:
    """The pace's next `count` chunks, each costing `fixed_s` plus `per_sample_s` a sample."""
    chunks = []
    for _ in range(count):
        chunk_s, rate = pace.next_chunk()
        pace.record(chunk_s, rate, fixed_s + per_sample_s * chunk_s * rate)
        chunks.append((chunk_s, rate))
    return chunks


def test_the_first_two_chunks_are_short_for_a_verdict_within_ten_seconds() -> None:
    chunks = run_chunks(Pace(0.01), 2, fixed_s=1.0, per_sample_s=0.0)
    assert chunks == [(4, 4), (4, 4)]


def test_chunks_double_until_the_symbols_cost_fits_a_one_percent_budget() -> None:
    pace = Pace(0.01)
    chunks = run_chunks(pace, 9, fixed_s=1.0, per_sample_s=0.0)
    assert [c for c, _ in chunks] == [4, 4, 8, 16, 32, 64, 100, 100, 100]
    assert pace.share() == 0.01


def test_a_generous_budget_keeps_chunks_short_and_updates_frequent() -> None:
    chunks = run_chunks(Pace(0.25), 8, fixed_s=1.0, per_sample_s=0.0)
    assert max(c for c, _ in chunks) == 4


def test_samples_that_alone_spend_the_budget_are_taken_less_often() -> None:
    pace = Pace(0.01)
    chunks = run_chunks(pace, 10, fixed_s=0.5, per_sample_s=0.004)
    assert chunks[-1][1] == MIN_RATE_PER_S
    fixed_s, per_sample_s = pace.fit()
    assert abs(fixed_s - 0.5) < 1e-6 and abs(per_sample_s - 0.004) < 1e-9
    assert chunks[-1][0] == 84, "0.5 s of symbols a chunk over the 0.6% the samples leave"
