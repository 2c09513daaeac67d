"""The run's timeline in the dashboard (`widgets.wholerun`): steps/s, the stalls and memory over
the whole run, from the live report's `timeline`, live and in `view` of the run folder.

The replayed run keeps 1 MiB more each step and stalls 1.5 s every 40th step (`replay.
leaky_with_checkpoints`), so where the marks must fall is known: under the spans of time in
which a stalled step ended, read from the step records the replay wrote, not from the report.
A short run in which the long run's detectors found nothing shows no timeline: the screens it
would crowd stay as they were. The picture at 80x24 is an SVG snapshot (update it only after
reading it).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from textual.pilot import Pilot

from tests.tui.conftest import LiveApp, advance, panel_text
from tests.tui.replay import START_T
from tests.tui.test_whole_screens import SIZES, assert_whole, settle
from torchtop.runs.journal import JournalReader
from torchtop.runs.layout import RunLayout
from torchtop.runs.records import Step
from torchtop.runs.step_blocks import FIRST_STEP
from torchtop.sessions.offline import analyze_jobs
from torchtop.tui.app import Dashboard, view_frame
from torchtop.tui.widgets.wholerun import STALL_MARK, RunTimelinePanel, spans

TICKS = 40
"""Simulated seconds: six stalls (every 6.5 s) and 300 MiB kept."""
Compare = Callable[..., bool]


def stalled_spans(run: Path, bucket_s: float) -> set[int]:
    """The spans of time in which a stalled step (over 1 s) ended, from the replay's records."""
    records = JournalReader(RunLayout(run).agent_events(4242)).read_new(final=True)
    steps = [r for r in records if isinstance(r, Step)]
    first = next(s for s in steps if s.step >= FIRST_STEP)  # where the timeline starts
    started = first.t - (first.wall_s or 0.0)
    return {int((s.t - started) // bucket_s) for s in steps if (s.wall_s or 0.0) > 1.0}


def timeline_rows(app: Dashboard) -> dict[str, str]:
    """Each row of the panel by its label: its plot and figures."""
    rows = panel_text(app, "#timeline").splitlines()
    return {row[:8].strip(): row[8:] for row in rows}


def check_rows(app: Dashboard, run: Path) -> None:
    """Steps/s over the run, a mark under each span with a stall, the resident set rising."""
    timeline = app.query_one(RunTimelinePanel).frame.report.timeline  # type: ignore[union-attr]
    assert timeline is not None
    rows = timeline_rows(app)
    assert list(rows) == ["steps/s", "stalls", "rss"], rows
    plot = len(rows["stalls"].split(" 6 ·")[0])
    columns = spans(len(timeline.buckets), plot)
    marked = {b for c, span in enumerate(columns) for b in span if rows["stalls"][c] == STALL_MARK}
    assert marked == stalled_spans(run, timeline.bucket_s)
    assert rows["stalls"].endswith("6 · every 40 steps"), rows["stalls"]
    # A span in which no step ended (inside a stall) has no reading: a blank, not a dip.
    memory = rows["rss"][:plot].replace(" ", "")
    assert memory[0] == "▁" and memory[-1] == "█" and list(memory) == sorted(memory), memory
    subtitle = str(app.query_one(RunTimelinePanel).border_subtitle)
    assert "rss +1.0 MB/step" in subtitle and "limit in ~" in subtitle, subtitle


async def test_the_timeline_marks_the_planted_stalls_and_the_growing_memory_live_and_in_view(
    live_app: LiveApp, tmp_path: Path
) -> None:
    app = live_app("leaky")
    async with app.run_test(size=SIZES["80x24"]) as pilot:
        await advance(pilot, TICKS)
        await settle(pilot)
        lines = assert_whole(app, "the timeline")
        check_rows(app, tmp_path / "run")
        shown = "\n".join(lines)
        assert "─ Over the run " in shown, shown
        # With stalls and growth found it is their evidence: the row of lists gives way first.
        assert any("Hot stacks" in line and "folded for room" in line for line in lines), shown
    jobs, state = analyze_jobs([str(tmp_path / "run")])
    assert jobs.reports[0].timeline is not None
    assert jobs.reports[0].timeline.started_at > START_T
    view = Dashboard(frame=view_frame(jobs.reports[0], state))
    async with view.run_test(size=SIZES["120x36"]) as pilot:
        await settle(pilot)
        assert_whole(view, "view")
        check_rows(view, tmp_path / "run")


async def test_a_short_run_where_nothing_was_found_shows_no_timeline(live_app: LiveApp) -> None:
    app = live_app("loader")
    async with app.run_test(size=SIZES["80x24"]) as pilot:
        await advance(pilot, 8)
        await settle(pilot)
        timeline = app.query_one(RunTimelinePanel).frame.report.timeline  # type: ignore[union-attr]
        assert timeline is not None and len(timeline.buckets) > 2  # there is one, not shown
        assert not app.query_one(RunTimelinePanel).display
        assert "Over the run" not in "\n".join(assert_whole(app, "short run"))


def test_the_timeline_at_80x24_looks_right(snap_compare: Compare, live_app: LiveApp) -> None:
    async def run_on(pilot: Pilot[Any]) -> None:
        await advance(pilot, TICKS)
        await settle(pilot)

    assert snap_compare(live_app("leaky"), terminal_size=SIZES["80x24"], run_before=run_on)
