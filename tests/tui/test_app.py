"""The dashboard's behaviour, driven through `App.run_test()` and `Pilot` over replayed runs:
each tick is let through by hand, so nothing here sleeps or reads the clock."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import pytest
from textual.pilot import Pilot
from textual.widgets import OptionList, Static

from tests.tui.conftest import LiveApp, advance, panel_text
from tests.tui.replay import SyntheticRun, dataloader_bound
from torchtop.assess.run import assess
from torchtop.live.watch import LiveMonitor
from torchtop.model.report import NodeReport, Report
from torchtop.runs.layout import RunLayout
from torchtop.runs.state import load_run
from torchtop.sessions.offline import analyze_paths
from torchtop.tui.app import Dashboard
from torchtop.tui.details import FixDetailsScreen
from torchtop.tui.frame import offline_frame
from torchtop.tui.helpscreen import HelpScreen
from torchtop.tui.ticking import FrameMessage
from torchtop.tui.widgets.panel import Panel
from torchtop.tui.widgets.stacks import StacksPanel
from torchtop.tui.widgets.steptime import StepTimePanel

NARROW = (80, 24)
LARGE = (160, 48)
TORN = "skipped 1 torn or unreadable record line(s)"


async def test_the_verdict_turns_from_unknown_to_dataloader_once_it_has_held(
    live_app: LiveApp,
) -> None:
    app = live_app("loader")
    async with app.run_test(size=NARROW) as pilot:
        await advance(pilot, 2)
        verdict = panel_text(app, "#verdict")
        assert verdict.startswith("UNKNOWN")
        assert "now assessing dataloader" in verdict
        await advance(pilot)
        # The class and the share its fixes may recover first, whole at 80 columns.
        assert panel_text(app, "#verdict").startswith("DATALOADER · 80% recoverable\n")


async def to_the_end(app: Dashboard, pilot: Pilot[Any], ticks: int) -> None:
    """The replay's `ticks`, then its final report shown: the dashboard stays (`stay`)."""
    await advance(pilot, ticks)
    await app.workers.wait_for_complete()
    await pilot.pause()


async def test_when_the_run_ends_the_fixes_listed_are_those_of_the_final_verdict_shown(
    live_app: LiveApp,
) -> None:
    # Two ticks: the live verdict has not held long enough to show; the final report's has.
    app = live_app("loader", ticks=2, stay=True)
    async with app.run_test(size=NARROW) as pilot:
        await to_the_end(app, pilot, 2)
        options = app.query_one("#fix-options", OptionList)
        first = str(options.get_option_at_index(0).prompt)
        assert panel_text(app, "#verdict").startswith("DATALOADER")
    assert "dataloader.num_workers" in first, first


async def test_p_after_the_run_ended_leaves_the_header_saying_finished(
    live_app: LiveApp,
) -> None:
    """Once the job has ended nothing more comes: the header must not claim a pause."""
    app = live_app("loader", ticks=2, stay=True)
    async with app.run_test(size=NARROW) as pilot:
        await to_the_end(app, pilot, 2)
        assert "FINISHED" in panel_text(app, "JobHeader")
        await pilot.press("p")
        await pilot.pause()
        header = panel_text(app, "JobHeader")
    assert "FINISHED" in header and "PAUSED" not in header, header


async def test_an_unknown_verdict_says_what_is_still_missing(live_app: LiveApp) -> None:
    app = live_app("comm")
    async with app.run_test(size=NARROW) as pilot:
        await advance(pilot)
        verdict = panel_text(app, "#verdict").splitlines()
    assert verdict[0] == "UNKNOWN"
    # Wrapped at 80 columns, never cut.
    assert " ".join(verdict[1:]).startswith("missing: 0 of the 5 steps needed seen so far")


async def test_without_colour_letters_and_words_still_tell_the_story(
    live_app: LiveApp, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    app = live_app("loader")
    async with app.run_test(size=LARGE) as pilot:
        await advance(pilot, 6)
        assert app.no_color
        verdict, steps = panel_text(app, "#verdict"), panel_text(app, "#steptime")
        fixes = str(app.query_one("#fix-options", OptionList).get_option_at_index(0).prompt)
    assert verdict.startswith("DATALOADER") and "HIGH " in verdict
    assert "D 82%" in steps and "C CPU" in steps
    # The rule's floor of 4 workers, sized for an 82% wait (0.82 / 0.18 -> 5): the report's value.
    assert fixes.startswith("1 HIGH override dataloader.num_workers = 5")


async def test_the_header_shows_the_job_its_uptime_step_and_rates(live_app: LiveApp) -> None:
    app = live_app("loader")
    async with app.run_test(size=LARGE) as pilot:
        await advance(pilot, 5)
        header = panel_text(app, "#header")
    assert "python train.py --batch-size 32 --num-workers 0" in header
    assert "LIVE" in header
    assert "up 0:05" in header
    assert "step 39" in header
    assert "steps/s →" in header
    assert "samples/s" in header


async def test_quitting_stops_the_ticks_and_returns_the_sources_final_report(
    live_app: LiveApp,
) -> None:
    app = live_app("loader")
    async with app.run_test(size=NARROW) as pilot:
        await advance(pilot, 3)
        # A process killed while writing its first record leaves it cut off mid-line: a tick
        # leaves such a line for a later read; only the monitor's final reading drops it.
        assert isinstance(app.source, LiveMonitor)
        with RunLayout(app.source.run_dir).agent_events(9999).open("a") as journal:
            journal.write('{"kind": "hello", "t": 17000')
        await advance(pilot)
        assert app.latest is not None and TORN not in app.latest.report.notes
        await pilot.press("q")
        await pilot.pause()
    assert isinstance(app.return_value, Report)
    assert app.return_value.verdict.bottleneck == "dataloader"
    assert app.ticks_stopped.is_set()
    assert TORN in app.return_value.notes


async def test_a_finished_snapshot_ends_the_dashboard_with_the_final_report(
    live_app: LiveApp,
) -> None:
    app = live_app("loader", ticks=4)
    async with app.run_test(size=NARROW) as pilot:
        await advance(pilot, 4)
        await app.workers.wait_for_complete()
    assert isinstance(app.return_value, Report)
    assert app.frames_received == 4


async def test_pause_freezes_the_panels_and_resuming_shows_the_newest_snapshot(
    live_app: LiveApp,
) -> None:
    app = live_app("loader")
    async with app.run_test(size=NARROW) as pilot:
        await advance(pilot, 2)
        await pilot.press("p")
        await advance(pilot, 3)
        paused = panel_text(app, "#header")
        assert "up 0:02" in paused
        assert "PAUSED" in paused
        assert app.frames_received == 5
        await pilot.press("p")
        resumed = panel_text(app, "#header")
    assert "up 0:05" in resumed
    assert "LIVE" in resumed


async def test_a_newer_frame_replaces_an_older_one_still_queued(live_app: LiveApp) -> None:
    app = live_app("loader")
    async with app.run_test(size=NARROW) as pilot:
        await advance(pilot, 1)
        first = app.latest
        assert first is not None
        older, newer = FrameMessage(first), FrameMessage(first)
        shown = app.frames_shown
        app.post_message(older)
        app.post_message(newer)
        await pilot.pause()
    assert app.frames_shown == shown + 1


async def test_enter_on_a_fix_shows_the_exact_command_line_change_and_escape_goes_back(
    live_app: LiveApp,
) -> None:
    app = live_app("loader")
    async with app.run_test(size=LARGE) as pilot:
        await advance(pilot, 6)
        await pilot.press("enter")
        screen = app.screen
        assert isinstance(screen, FixDetailsScreen)
        text = str(screen.query_one("#details-text").render())
        assert "the agent sets DataLoader(num_workers=5) in the relaunched process" in text
        assert "- python train.py --batch-size 32 --num-workers 0" in text
        assert "+ python train.py --batch-size 32 --num-workers 5" in text
        assert "Evidence" in text and "dataloader_share" in text
        assert "Why" in text
        await pilot.press("escape")
        assert not isinstance(app.screen, FixDetailsScreen)


def notices(app: Dashboard) -> list[str]:
    return [notice.message for notice in app._notifications]


async def test_without_a_hook_a_on_a_fix_says_why_and_names_the_run_command_to_use(
    live_app: LiveApp,
) -> None:
    app = live_app("loader")
    async with app.run_test(size=NARROW) as pilot:
        await advance(pilot, 6)
        await pilot.press("enter")
        assert isinstance(app.screen, FixDetailsScreen)
        assert not app.screen.active_bindings["a"].binding.show  # not offered in the footer
        await pilot.press("a")
        await pilot.pause()
        assert isinstance(app.screen, FixDetailsScreen)  # nothing was applied
    (said,) = notices(app)
    assert "torchtop did not start this job" in said
    assert "`torchtop run -- python train.py --batch-size 32 --num-workers 0` to try fixes" in said


async def test_in_view_a_says_no_job_runs_to_try_a_fix_on_and_the_footer_hides_it(
    offline_app: Dashboard,
) -> None:
    async with offline_app.run_test(size=NARROW) as pilot:
        assert not offline_app.screen.active_bindings["a"].binding.show
        await pilot.press("a")
        await pilot.pause()
        await pilot.press("q")
    (said,) = notices(offline_app)
    assert said.startswith("view shows a recorded run: no job is running to try a fix on")
    assert said.endswith("`torchtop run -- python train.py` to try fixes")


async def test_a_dashboard_with_a_clock_says_how_long_it_has_run_and_that_q_ends_it(
    live_app: LiveApp,
) -> None:
    app = live_app("loader", clock=True)
    async with app.run_test(size=LARGE) as pilot:
        await advance(pilot, 2)
        clock = str(app.query_one("#run-clock", Static).render())
        await pilot.press("q")
    assert clock.startswith("running 0:0") and clock.endswith("q ends it")


async def test_question_mark_opens_the_help_and_escape_closes_it(live_app: LiveApp) -> None:
    app = live_app("loader")
    async with app.run_test(size=NARROW) as pilot:
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("escape")
        assert not isinstance(app.screen, HelpScreen)


async def test_the_footer_names_the_keys(live_app: LiveApp) -> None:
    app = live_app("loader")
    async with app.run_test(size=NARROW) as pilot:
        await advance(pilot, 6)
        shown = {
            b.binding.description for b in app.screen.active_bindings.values() if b.binding.show
        }
    assert {"Help", "Quit", "Pause", "Panel", "Details"} <= shown


async def test_shift_tab_moves_from_the_fixes_to_the_step_selector_offline(
    offline_app: Dashboard,
) -> None:
    async with offline_app.run_test(size=NARROW) as pilot:
        assert isinstance(offline_app.focused, OptionList)
        await pilot.press("shift+tab")
        assert isinstance(offline_app.focused, StepTimePanel)
        await pilot.press("right", "right")
        assert panel_text(offline_app, "#steptime").startswith("step #6 of #5-#10")
        await pilot.press("left")
        assert panel_text(offline_app, "#steptime").startswith("step #5")
        await pilot.press("a")
        assert panel_text(offline_app, "#steptime").startswith("all 6 steps")


async def test_offline_the_kernel_and_operator_lists_take_the_live_counters_place(
    offline_app: Dashboard,
) -> None:
    async with offline_app.run_test(size=LARGE):
        tops = panel_text(offline_app, "KernelList") + panel_text(offline_app, "OperatorList")
        header = panel_text(offline_app, "#header")
        assert not offline_app.query("DevicesPanel")
        # Offline the bottom row holds only what the trace recorded: here, shapes.
        bottom = offline_app.query_one("#bottom").children
        assert [panel.id for panel in bottom if panel.display] == ["efficiency"]
    assert "kernels (share of kernel time)" in tops
    assert "enumerate(DataLoader)" in tops
    assert "OFFLINE" in header and "Tesla V100" in header


async def test_offline_there_is_nothing_to_pause(offline_app: Dashboard) -> None:
    async with offline_app.run_test(size=NARROW) as pilot:
        await pilot.press("p")
        assert "PAUSED" not in panel_text(offline_app, "#header")
        await pilot.press("q")
    assert offline_app.return_value is None


async def test_resizing_to_a_large_terminal_gives_each_gpu_its_own_plots(
    live_app: LiveApp,
) -> None:
    app = live_app("comm")
    async with app.run_test(size=NARROW) as pilot:
        await advance(pilot, 6)
        narrow = panel_text(app, "DevicesPanel")
        await pilot.resize_terminal(*LARGE)
        await pilot.pause()
        large = panel_text(app, "DevicesPanel")
        assert app.screen.has_class("-wide", "-tall")
    assert " util" not in narrow
    assert narrow.startswith("GPU0")
    assert "GPU0 NVIDIA A100-SXM4-40GB\n util" in large
    assert " PCIe" in large and " power" in large


async def test_without_a_gpu_the_devices_panel_says_so_in_one_line(live_app: LiveApp) -> None:
    app = live_app("loader")
    async with app.run_test(size=LARGE) as pilot:
        await advance(pilot, 4)
        devices = panel_text(app, "DevicesPanel").splitlines()
    assert devices[0].startswith("GPU   none · NVML: no NVIDIA driver found")
    assert not any(line.startswith("GPU") for line in devices[1:])
    assert any(line.startswith("cpu1") for line in devices)


async def test_two_ranks_show_the_ranks_table_with_the_slowest_marked(live_app: LiveApp) -> None:
    app = live_app("comm")
    async with app.run_test(size=LARGE) as pilot:
        await advance(pilot, 6)
        ranks = panel_text(app, "#ranks").splitlines()
        verdict = panel_text(app, "#verdict")
    assert verdict.startswith("COMMUNICATION")
    rows = {line[:6]: line for line in ranks[1:]}
    assert set(rows) == {"rank 0", "rank 1"}
    marked = [line for line in rows.values() if "◀" in line and line.endswith("slowest")]
    assert len(marked) == 1
    step_ms = {line[:6]: float(line[8:16]) for line in rows.values()}
    assert marked[0][:6] == max(step_ms, key=lambda rank: step_ms[rank])


async def test_one_rank_keeps_the_ranks_table_hidden(live_app: LiveApp) -> None:
    app = live_app("loader")
    async with app.run_test(size=LARGE) as pilot:
        await advance(pilot, 3)
        assert not app.query_one("#ranks").display
        assert app.query_one("#bottom").display


async def test_the_hot_stacks_count_each_sample_once_at_the_users_own_line(
    live_app: LiveApp,
) -> None:
    app = live_app("loader")
    async with app.run_test(size=LARGE) as pilot:
        await advance(pilot, 8)
        rows = [line for line in panel_text(app, "#stacks").splitlines() if line.strip()]
        panel = app.query_one("#stacks", StacksPanel)
        details = [row.whole for row in panel.shown]
        counted = app.latest.hot.samples if app.latest is not None else 0
        caption = str(panel.border_subtitle)
    # What 100% is, in the border beside the list's place.
    assert counted > 0 and caption.endswith(f"% of {counted} samples, each at your innermost line")
    assert rows and all("ada/train.py" in row or "ada/model.py" in row for row in rows)
    assert sum(int(row.split("%")[0]) for row in rows) == 100
    # The library's frames the time goes to, under a line of the user's, in its details.
    assert any("modules/linear.py" in text for text in details)


async def test_the_step_history_shows_the_change_when_a_profiler_window_arrives(
    live_app: LiveApp,
) -> None:
    app = live_app("comm")
    async with app.run_test(size=LARGE) as pilot:
        await advance(pilot, 3)
        before = panel_text(app, "#steptime")
        await advance(pilot, 3)
        after = panel_text(app, "#steptime")
    assert "step timing only" in before
    assert "N 71%" in after
    lines = after.splitlines()
    history = lines[lines.index(next(x for x in lines if x.startswith("history"))) + 1 :]
    communication = next(line for line in history if line.startswith("N "))
    assert "▁" in communication  # before the window: not measured, so nothing
    assert "▆" in communication  # after it: 71% of the step


async def test_a_frame_that_draws_as_the_last_one_asks_textual_for_no_redraw(
    live_app: LiveApp,
) -> None:
    app = live_app("loader")
    async with app.run_test(size=LARGE) as pilot:
        await advance(pilot, 3)
        await pilot.pause()
        draws = Panel.renders
        assert app.latest is not None
        app.show(app.latest)
        await pilot.pause()
        assert Panel.renders == draws
        await advance(pilot)
        await pilot.pause()
        assert Panel.renders > draws


async def test_a_recorded_run_folder_offline_shows_its_samples_stacks_and_top_lists(
    tmp_path: Path,
) -> None:
    run = SyntheticRun(tmp_path / "run", dataloader_bound())
    run.advance(12.0)
    run.close()
    report = analyze_paths([str(run.root)])
    app = Dashboard(frame=offline_frame(report, load_run(run.root)))
    async with app.run_test(size=LARGE):
        header = panel_text(app, "#header")
        devices = panel_text(app, "DevicesPanel")
        stacks = panel_text(app, "#stacks")
        tops = panel_text(app, "OperatorList")
    assert "OFFLINE" in header and "python train.py" in header
    assert devices.startswith("GPU   none · NVML") and "cpu1" in devices
    assert "__getitem__" in stacks
    assert "operators (share of self time)" in tops


async def test_a_node_whose_stream_fell_silent_is_named_in_the_header_with_when_it_was_seen(
    live_app: LiveApp,
) -> None:
    app = live_app("loader")
    monitor = app.source
    assert isinstance(monitor, LiveMonitor)
    silent = NodeReport(name="b", ranks=(2, 3), answering=False, last_seen_epoch_s=1_700_000_000)

    def streamed(*args: Any) -> Report:
        plain = assess(*args, context=monitor.context)  # the plain assessment
        return msgspec.structs.replace(plain, nodes=(silent,))

    monitor.assessor = streamed
    async with app.run_test(size=LARGE) as pilot:
        await advance(pilot, 2)
        header = panel_text(app, "#header")
    assert "node b not answering since 22:13:20 UTC" in header  # 1_700_000_000 s in UTC
