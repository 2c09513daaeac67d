"""`o`: the job's own output, live, on a real `run` of a real job that says known lines
(`tests/workloads/talking.py`): the lines it printed appear, new ones appear without reopening,
`/` filters them, its stderr lines are marked as its `stderr.log` says, and where torchtop did
not start the job (`attach`) `o` says so in one line instead of opening an empty screen."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.widgets import RichLog

from tests.conftest import RULES_DIR, WORKLOADS
from tests.tui.conftest import LiveApp
from torchtop.diagnosis.rules import load_rules
from torchtop.jobs.job import Output, start
from torchtop.live.watch import LiveMonitor
from torchtop.sessions.watching import ATTACH_NO_OUTPUT
from torchtop.tui.app import Dashboard
from torchtop.tui.outputscreen import OutputScreen
from torchtop.tui.ticking import IntervalPacer

pytestmark = pytest.mark.slow
TALKING = WORKLOADS / "talking.py"


async def wait_until(pilot: Pilot[Any], ready: Callable[[], object], what: str, s: float) -> None:
    deadline = time.monotonic() + s
    while not ready():
        assert time.monotonic() < deadline, f"no {what} within {s:g} s"
        await pilot.pause(0.2)


def run_dashboard(tmp_path: Path, *args: str) -> Dashboard:
    """`torchtop run -- python talking.py ARGS` as the session wires it: output in job.log."""
    run_dir = tmp_path / "run"
    command = [sys.executable, str(TALKING), *args]
    job = start(command, run_dir, "run", output=Output.log(run_dir / "job.log"))
    monitor = LiveMonitor(run_dir, load_rules(RULES_DIR), job=job, kind="run")
    return Dashboard(monitor, pacer=IntervalPacer(1.0), output_dir=run_dir)


async def open_output(pilot: Pilot[Any], ready: Callable[[], object]) -> OutputScreen:
    """Once `ready` (the job said enough), `o`, and the screen once it shows lines."""
    await wait_until(pilot, ready, "the job's lines", 120)
    await pilot.press("o")
    screen = pilot.app.screen
    assert isinstance(screen, OutputScreen)
    await wait_until(pilot, lambda: screen.reads > 0 and shown_lines(screen), "lines", 30)
    return screen


def shown_lines(screen: OutputScreen) -> list[str]:
    """The log's lines as the terminal shows them (the stderr mark included)."""
    log = screen.query_one(RichLog)
    return [strip.text.rstrip() for strip in log.lines]


def last_step(lines: list[str]) -> int:
    return max(int(line.split()[1]) for line in lines if line.lstrip().startswith("step "))


async def test_o_shows_the_jobs_own_lines_and_new_ones_appear_without_reopening(
    tmp_path: Path,
) -> None:
    app = run_dashboard(tmp_path, "--steps", "400")
    async with app.run_test(size=(80, 24)) as pilot:
        log = tmp_path / "run" / "job.log"

        def footer() -> str:
            return " ".join(str(key.render()) for key in app.screen.query("FooterKey"))

        await wait_until(pilot, lambda: "o Output" in footer(), "o in the footer", 30)
        screen = await open_output(pilot, lambda: "step 3 loss" in log.read_text())
        assert str(log) in str(screen.query_one(RichLog).border_title)
        first = shown_lines(screen)
        # What the job printed, as it printed it (its own log is the outside truth).
        printed = [line for line in log.read_text().splitlines() if line.startswith("step ")]
        assert f" {printed[0]}" in first
        seen = last_step(first)
        await wait_until(pilot, lambda: last_step(shown_lines(screen)) >= seen + 5, "more", 60)
        assert app.screen is screen  # the same screen, never reopened
        await pilot.press("escape")
        assert not isinstance(app.screen, OutputScreen)
        await pilot.press("q")


async def test_slash_filters_the_output_and_the_stderr_lines_are_marked_as_stderr_log_says(
    tmp_path: Path,
) -> None:
    app = run_dashboard(tmp_path, "--steps", "400")
    async with app.run_test(size=(80, 24)) as pilot:
        err = tmp_path / "run" / "stderr.log"
        screen = await open_output(pilot, lambda: "step 10 slow" in err.read_text())
        lines = shown_lines(screen)
        marked = [line[1:] for line in lines if line.startswith("▌")]
        assert marked and marked == err.read_text().splitlines()[: len(marked)]
        assert all(line.startswith(" step ") for line in lines if not line.startswith("▌"))
        await pilot.press("slash", *"step 10 ", "enter")
        filtered = shown_lines(screen)
        assert [line[:14] for line in filtered] == [" step 10 loss ", "▌warn: step 10"]
        await pilot.press("e")  # stderr alone
        assert shown_lines(screen) == ["▌warn: step 10 slow"]
        await pilot.press("e", "slash", "escape")
        assert len(shown_lines(screen)) > len(filtered)  # the filter is gone
        await pilot.press("q")  # back to the dashboard
        assert not isinstance(app.screen, OutputScreen)
        await pilot.press("q")


async def test_under_attach_o_says_in_one_line_that_torchtop_did_not_start_the_job(
    live_app: LiveApp,
) -> None:
    app = live_app("loader", why_no_output=ATTACH_NO_OUTPUT)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("o")
        await pilot.pause()
        assert not isinstance(app.screen, OutputScreen)
        said = [n.message for n in app._notifications]
        assert said == [ATTACH_NO_OUTPUT]
        await pilot.press("q")
