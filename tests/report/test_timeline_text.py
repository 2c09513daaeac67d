"""The text report's timeline: a column a bucket, steps/s, the stalls marked where they began,
memory where it was read, and nothing for a report without a timeline (a trace)."""

from __future__ import annotations

from torchtop.model.timeline import Timeline, TimelineBucket
from torchtop.report.long_run import timeline_text

MIB = 2**20


def test_a_timeline_is_a_line_per_figure_with_where_it_began_and_ended() -> None:
    rates = [10.0, 10.0, None, 5.0]
    buckets = tuple(
        TimelineBucket(
            start_s=k,
            end_s=k + 1,
            steps=0 if rate is None else 10,
            steps_per_s=rate,
            rss_bytes=(100 + 10 * k) * MIB,
            stalls=int(k == 1),
        )
        for k, rate in enumerate(rates)
    )
    lines = timeline_text(Timeline(started_at=0.0, bucket_s=1.0, buckets=buckets))
    assert lines == [
        "OVER THE RUN  4 s, 1 s a column",
        "  steps/s   ██ ▁  10 -> 5",
        "  stalls     !    1",
        "  rss       ▁▃▆█  100 MiB -> 130 MiB",
        "",
    ]


def test_no_timeline_is_no_line() -> None:
    assert timeline_text(None) == []
