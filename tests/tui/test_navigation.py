"""Moving around the dashboard with the keyboard, through `App.run_test()` and Pilot: tab and
shift+tab reach every panel shown, each list scrolls to its last row, sorts and filters, Enter
shows a row whole (a kernel's demangled name), the step selector answers only where it says,
and the footer keeps every key at 80 columns. Real GPU traces where the shape matters (the
8-rank DLRM step, an MI300 trace with mangled kernel names)."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual import events
from textual.widget import Widget

from tests.conftest import analyze_json
from tests.report.test_trials import trial
from tests.tui.conftest import LiveApp, advance, panel_text
from torchtop.model.trials import TrialOutcome
from torchtop.sessions.offline import analyze_paths
from torchtop.tui.app import Dashboard
from torchtop.tui.frame import offline_frame
from torchtop.tui.helpscreen import help_text
from torchtop.tui.rowscreen import RowScreen
from torchtop.tui.widgets.devices import DevicesPanel
from torchtop.tui.widgets.filterbar import FilterBar
from torchtop.tui.widgets.fixlist import FixOptions
from torchtop.tui.widgets.keysfooter import KeysFooter
from torchtop.tui.widgets.ranks import RanksPanel
from torchtop.tui.widgets.stacks import StacksPanel
from torchtop.tui.widgets.steptime import StepTimePanel
from torchtop.tui.widgets.tops import KernelList, OperatorList
from torchtop.tui.widgets.trial import TrialPanel, TrialView
from torchtop.tui.widgets.verdict import VerdictPanel

NARROW = (80, 24)
DLRM = "param/dlrm_kineto"
MI300 = "tracelens/mi300/resnet_act_checkpoint.json.gz"


def offline(path: Path) -> Dashboard:
    return Dashboard(frame=offline_frame(analyze_paths([str(path)])))


async def focus_cycle(app: Dashboard, press: object, key: str = "tab") -> list[type[Widget]]:
    """The focused widget's type after each `key`, until the focus is back where it began."""
    start = app.focused
    seen: list[type[Widget]] = []
    for _ in range(20):
        await press(key)  # type: ignore[operator]
        assert app.focused is not None
        seen.append(type(app.focused))
        if app.focused is start:
            return seen
    pytest.fail(f"tab never came back to {start}: {seen}")


async def test_tab_reaches_every_panel_of_an_8_rank_trace_and_shift_tab_goes_back(
    shared: Path,
) -> None:
    app = offline(shared / DLRM)
    async with app.run_test(size=NARROW) as pilot:
        forward = await focus_cycle(app, pilot.press)
        backward = await focus_cycle(app, pilot.press, "shift+tab")
    panels = {FixOptions, KernelList, OperatorList, RanksPanel, VerdictPanel, StepTimePanel}
    assert set(forward) == panels and len(forward) == len(panels)
    assert backward[:-1] == list(reversed(forward[:-1]))


async def test_tab_reaches_every_live_panel_too(live_app: LiveApp) -> None:
    app = live_app("loader")
    async with app.run_test(size=NARROW) as pilot:
        await advance(pilot, 6)
        seen = set(await focus_cycle(app, pilot.press))
    assert {VerdictPanel, StepTimePanel, FixOptions, DevicesPanel, StacksPanel} <= seen


async def test_end_shows_rank_7_and_home_rank_0_at_80x24(shared: Path) -> None:
    app = offline(shared / DLRM)
    async with app.run_test(size=NARROW) as pilot:
        app.query_one(RanksPanel).focus()
        await pilot.pause()
        first = panel_text(app, "#ranks")
        await pilot.press("end")
        last = panel_text(app, "#ranks")
        await pilot.press("home")
        again = panel_text(app, "#ranks")
        await pilot.press("pagedown")
        paged = app.query_one(RanksPanel).cursor
    assert "rank 0" in first and "rank 7" not in first  # 80x24 has room for three ranks
    assert last.splitlines()[-1].startswith("rank 7")
    assert "rank 0" in again
    assert paged > 0


async def test_the_mouse_wheel_scrolls_a_list_without_focusing_it(shared: Path) -> None:
    app = offline(shared / DLRM)
    async with app.run_test(size=NARROW) as pilot:
        ranks = app.query_one(RanksPanel)
        for _ in range(3):  # three rows a notch: rank 7 is in view after the third
            ranks.post_message(events.MouseScrollDown(ranks, 1, 1, 0, 1, 0, False, False, False))
            await pilot.pause()
        wheeled = panel_text(app, "#ranks")
        ranks.post_message(events.MouseScrollUp(ranks, 1, 1, 0, -1, 0, False, False, False))
        await pilot.pause()
        back = panel_text(app, "#ranks")
    assert "rank 7" in wheeled and "rank 0" not in wheeled
    assert "rank 7" not in back


async def test_s_sorts_the_ranks_by_each_column_and_capital_s_turns_the_order(
    shared: Path,
) -> None:
    report = analyze_json(shared / DLRM)
    steps = {r["label"]: r["steps"]["mean_ms"] for r in report["ranks"]}
    app = offline(shared / DLRM)
    async with app.run_test(size=(120, 48)) as pilot:
        app.query_one(RanksPanel).focus()
        await pilot.press("s", "s")  # rank, then step ms
        slowest_first = panel_text(app, "#ranks").splitlines()[1:]
        await pilot.press("S")
        fastest_first = panel_text(app, "#ranks").splitlines()[1:]
        await pilot.pause()
        caption = app.query_one(RanksPanel).border_subtitle
    by_step = sorted(steps, key=lambda label: -steps[label])
    assert [line[:6] for line in slowest_first] == by_step[: len(slowest_first)]
    assert [line[:6] for line in fastest_first] == by_step[::-1][: len(fastest_first)]
    assert caption == "1/8 · step ms ↑"


async def test_slash_filters_a_list_enter_keeps_it_and_escape_clears_it(shared: Path) -> None:
    app = offline(shared / DLRM)
    async with app.run_test(size=(120, 48)) as pilot:
        app.query_one(RanksPanel).focus()
        await pilot.press("slash")
        assert app.query_one(FilterBar).has_focus
        await pilot.press(*"communication", "enter")
        kept = panel_text(app, "#ranks")
        assert app.query_one(RanksPanel).has_focus and not app.query_one(FilterBar).display
        await pilot.press("escape")
        cleared = panel_text(app, "#ranks")
        count = app.query_one(RanksPanel).count
    shown = kept.splitlines()[1:]
    assert shown and all("communication" in line for line in shown)
    assert len(shown) < 8 and "rank 0" in cleared and count == 8


async def test_enter_on_a_kernel_shows_its_name_demangled_and_whole(shared: Path) -> None:
    app = offline(shared / MI300)
    async with app.run_test(size=NARROW) as pilot:
        kernels = app.query_one(KernelList)
        kernels.focus()
        await pilot.press("slash", *"kernel_batched_gemm", "enter")
        listed = panel_text(app, "KernelList")
        await pilot.press("enter")
        assert isinstance(app.screen, RowScreen)
        whole = app.screen.text
        await pilot.press("escape")
        assert not isinstance(app.screen, RowScreen)
    assert "ck::tensor_operation::device::kernel_batched_gemm_xdlops_bwd_weight<…>" in listed
    assert "_ZN2ck" not in listed
    name = whole.splitlines()[1]
    assert name.startswith("void ck::tensor_operation::device::kernel_batched_gemm_xdlops_")
    assert "as recorded: _ZN2ck16tensor_operation" in whole


async def test_the_step_selector_answers_arrows_only_when_focused_and_says_so(
    offline_app: Dashboard,
) -> None:
    async with offline_app.run_test(size=NARROW) as pilot:
        steps = offline_app.query_one(StepTimePanel)
        await pilot.press("right")  # the fixes have the focus: no step is picked
        assert steps.selected is None
        assert steps.border_subtitle == "tab here to pick a step"
        await pilot.press("shift+tab")
        assert steps.border_subtitle == "←/→ pick a step · Home/End"
        await pilot.press("end")
        assert panel_text(offline_app, "#steptime").startswith("step #10 of #5-#10")
        await pilot.press("home")
        assert panel_text(offline_app, "#steptime").startswith("step #5 of")
        await pilot.press("pagedown")
        assert panel_text(offline_app, "#steptime").startswith("step #10 of")
        await pilot.press("a")
        assert steps.selected is None


async def test_a_on_a_live_step_panel_still_says_why_nothing_applies(live_app: LiveApp) -> None:
    app = live_app("loader")
    async with app.run_test(size=NARROW) as pilot:
        await advance(pilot, 3)
        app.query_one(StepTimePanel).focus()
        await pilot.press("a")
        titles = [notice.title for notice in app._notifications]
    assert "Nothing to apply here" in titles


async def test_at_80_columns_the_footer_keeps_every_key_and_the_clock_within_the_width(
    live_app: LiveApp,
) -> None:
    app = live_app("loader", clock=True)
    async with app.run_test(size=NARROW) as pilot:
        await advance(pilot, 3)
        app.query_one(DevicesPanel).focus()
        await pilot.pause()
        await pilot.pause()
        footer = app.query_one(KeysFooter)
        rows = [[str(key.render()) for key in row.children] for row in footer.children]
        words = " ".join(" ".join(row) for row in rows)
    assert all(sum(len(key) + 1 for key in row) <= NARROW[0] + 1 for row in rows)
    for key in ("Whole panel", "Panel", "Help", "Quit", "Pause", "running 0:0"):
        assert key in words


async def test_at_80x24_a_finished_trial_keeps_its_outcome_and_gives_the_bottom_row_back(
    live_app: LiveApp,
) -> None:
    app = live_app("loader")
    kept = trial(True, 0.2, 0.1)  # 5 -> 10 steps/s: 2.00x
    async with app.run_test(size=NARROW) as pilot:
        await advance(pilot, 6)
        panel = app.query_one(TrialPanel)
        panel.view = TrialView("option --num-workers: 0 -> 5")
        app.arrange_bottom()
        await pilot.pause()
        running_hides = not app.query_one("#bottom").display
        panel.view = panel.view.finished(TrialOutcome(kept, kept.plan_after, Path("run/jobs/01")))
        app.arrange_bottom()
        await pilot.pause()
        shown = str(panel.render())
        seen = set(await focus_cycle(app, pilot.press))
    assert running_hides
    assert shown.startswith("faster: kept: measured 2.00x")
    assert StacksPanel in seen


def test_the_help_lists_the_keys_to_move_sort_and_filter() -> None:
    text = help_text().plain
    for key in ("tab / shift+tab", "pgup / pgdn", "home / end", "s / S", "/ ", "enter"):
        assert f"  {key}" in text
