"""Every screen of the dashboard whole at 80x24 and 120x36, in every state a session goes through.

Live, paused, a fix's details, the job's output, a trial running, a kept fix, one that falls
short since, its revert, and the job's crash: at each, every box on screen is closed (its four
corners and both sides: no panel squeezed to a top border, none without its bottom), and the
footer is one row that shows the focused panel's keys. Where the sections cannot all fit, one
is folded to a line that says so and `f` unfolds it. The states are reached through the replayed
run's real monitor and the panels' own state (a trial's view, the job's ending), one app per
walk, so the whole file runs in seconds; `test_job_end` reaches a real crash at 80x24. The
crash at 80x24 is also an SVG snapshot (update it only after reading the new picture).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.widget import Widget

from tests.report.test_trials import trial
from tests.tui.boxes import broken_boxes, footer_rows, screen_lines, top_lines
from tests.tui.conftest import LiveApp, advance, wait_until
from tests.tui.test_output_snapshots import plant_log
from torchtop.model.report import JobExit
from torchtop.model.trials import RevertOutcome, TrialOutcome
from torchtop.trials.holding import HoldingTest, check_holding
from torchtop.trials.tracked import claim_of
from torchtop.tui.app import Dashboard
from torchtop.tui.details import FixDetailsScreen
from torchtop.tui.outputscreen import OutputScreen
from torchtop.tui.widgets.folded import FoldedLine
from torchtop.tui.widgets.jobend import JobEndPanel
from torchtop.tui.widgets.trial import TrialPanel, TrialView

SIZES = {"80x24": (80, 24), "120x36": (120, 36)}
KEPT = trial(True, 0.2, 0.1)  # 5 -> 10 steps/s: 2.00x
SPANS = HoldingTest(warmup_steps=0, recent_steps=10, recent_s=0.5)
TRACEBACK = (
    "Traceback (most recent call last):",
    '  File "/work/train.py", line 41, in <module>',
    "    main()",
    '  File "/work/train.py", line 37, in main',
    "    loss = model(batch).sum()",
    "RuntimeError: planted failure after 20 steps",
)
CRASH = JobExit(how="crashed", status=1, stderr_tail=TRACEBACK, log="run/job.log")
Compare = Callable[..., bool]


def assert_whole(app: Dashboard, state: str) -> list[str]:
    """Every box closed, and the footer one row: the last, naming the focused panel's keys."""
    lines = screen_lines(app)
    shown = "\n".join(lines)
    assert broken_boxes(top_lines(app)) == [], f"{state}: {broken_boxes(top_lines(app))}\n{shown}"
    if app.screen.query(FoldedLine):  # the dashboard itself, not a screen over it
        assert footer_rows(app) == 1, f"{state}: the footer takes {footer_rows(app)} rows"
        assert "q Quit" in lines[-1], f"{state}: {lines[-1]}"
        assert "q Quit" not in lines[-2], f"{state}: the footer wraps\n{shown}"
        for key in own_keys(app):
            assert key in lines[-1], f"{state}: {key!r} not in the footer: {lines[-1]}"
    return lines


def own_keys(app: Dashboard) -> list[str]:
    """`⏎ Details`, ...: the focused panel's shown keys, as the footer should write them."""
    focused = app.focused
    return [
        f"{app.get_key_display(binding)} {binding.description}"
        for node, binding, enabled, _ in app.screen.active_bindings.values()
        if binding.show and isinstance(node, Widget) and node is not app.screen and enabled
        and focused is not None and (node is focused or node in focused.ancestors)
    ]  # fmt: skip


async def settle(pilot: Pilot[Any]) -> None:
    """Two turns: the arrangement a change asked for (`Reshaped`), then its repaint."""
    await pilot.pause()
    await pilot.pause()


async def show_trial(pilot: Pilot[Any], view: TrialView) -> None:
    app = pilot.app
    assert isinstance(app, Dashboard)
    app.query_one(TrialPanel).view = view
    app.arrange_bottom()
    await settle(pilot)


async def open_screen(pilot: Pilot[Any], key: str, kind: type[Any]) -> None:
    await pilot.press(key)
    await wait_until(pilot, lambda: isinstance(pilot.app.screen, kind), kind.__name__, 30)
    await settle(pilot)


@pytest.mark.parametrize("size", SIZES)
async def test_live_paused_details_output_and_a_crash_draw_whole_boxes(
    live_app: LiveApp, tmp_path: Path, size: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    app = live_app("loader", output_dir=Path("run"), clock=True)
    plant_log(tmp_path / "run")
    async with app.run_test(size=SIZES[size]) as pilot:
        await advance(pilot, 8)
        await settle(pilot)
        assert_whole(app, "live")
        assert "m Modules" in screen_lines(app)[-1]
        await pilot.press("p")
        await settle(pilot)
        assert "PAUSED" in assert_whole(app, "paused")[0]
        await pilot.press("p")
        await open_screen(pilot, "enter", FixDetailsScreen)
        assert_whole(app, "details")
        await pilot.press("escape")
        await open_screen(pilot, "o", OutputScreen)
        assert_whole(app, "output")
        await pilot.press("escape")
        await settle(pilot)
        app.query_one(JobEndPanel).ending = CRASH
        await settle(pilot)
        lines = assert_whole(app, "crashed")
        assert TRACEBACK[-1] in "\n".join(lines)  # the cause, whatever room is left


@pytest.mark.parametrize("size", SIZES)
async def test_a_trial_its_kept_fix_the_revert_and_a_crash_draw_whole_boxes(
    live_app: LiveApp, size: str
) -> None:
    app = live_app("loader", clock=True)
    async with app.run_test(size=SIZES[size]) as pilot:
        await advance(pilot, 8)
        await show_trial(pilot, TrialView("option --num-workers: 0 -> 2"))
        assert_whole(app, "during a trial")
        outcome = TrialOutcome(KEPT, KEPT.plan_after, Path("run/jobs/01"))
        kept = app.query_one(TrialPanel).view
        assert kept is not None
        kept = kept.finished(outcome)
        await show_trial(pilot, kept)
        assert_whole(app, "after a kept trial")
        short = kept.tracked(check_holding([0.1] * 20 + [0.14] * 20, claim_of(KEPT), SPANS))
        await show_trial(pilot, short)
        assert_whole(app, "a kept fix falling short")
        assert short.holding is not None
        back = RevertOutcome(KEPT, KEPT.plan_before, Path("run/jobs/02"), short.holding)
        await show_trial(pilot, short.reverted(back))
        assert_whole(app, "after a revert")
        app.query_one(JobEndPanel).ending = CRASH
        await settle(pilot)
        lines = assert_whole(app, "crashed after a revert")
        assert TRACEBACK[-1] in "\n".join(lines)


async def test_at_80x24_a_section_that_cannot_fit_is_folded_to_a_line_and_f_unfolds_it(
    live_app: LiveApp,
) -> None:
    app = live_app("loader")
    async with app.run_test(size=SIZES["80x24"]) as pilot:
        await advance(pilot, 8)
        app.query_one(JobEndPanel).ending = CRASH
        await settle(pilot)
        lines = assert_whole(app, "crashed")
        folded = [line for line in lines if "folded for room · f: unfold" in line]
        assert len(folded) == 1 and "Hot stacks" in folded[0], "\n".join(lines)
        assert "f Unfold" in lines[-1]
        await pilot.press("f")
        await settle(pilot)
        lines = assert_whole(app, "unfolded")
        shown = "\n".join(lines)
        assert "─ Hot stacks " in shown, shown  # the lists are a box again
        assert any(line.startswith("╶─ Job failed · folded for room") for line in lines), shown
        await pilot.press("f")
        await settle(pilot)
        assert TRACEBACK[-1] in "\n".join(assert_whole(app, "the ending again"))


def test_a_crash_at_80x24_looks_right(snap_compare: Compare, live_app: LiveApp) -> None:
    """The picture of the issue's screen: the lists folded to their line, the ending whole."""

    async def crashed(pilot: Pilot[Any]) -> None:
        await advance(pilot, 8)
        app = pilot.app
        assert isinstance(app, Dashboard)
        app.query_one(JobEndPanel).ending = CRASH
        await settle(pilot)

    assert snap_compare(live_app("loader"), terminal_size=SIZES["80x24"], run_before=crashed)
