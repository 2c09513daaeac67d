"""While a fix is trialled the job is stopped and nothing it does moves the dashboard; the header
and the trial panel must still show, every second, that the trial is alive: the header says the
job is stopped and for how long (not its last rate as if live), the panel the trial's time, its
phase's and, from the second measured run, about how long the run in progress has left.

On the demo's real job and a real trial (`test_apply_live`'s), read twice a few seconds apart."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.tui.conftest import wait_until
from tests.tui.test_apply_live import KNOB, demo_dashboard, open_apply
from torchtop.tui.widgets.header import JobHeader
from torchtop.tui.widgets.trial import TrialPanel

pytestmark = pytest.mark.slow
STOPPED = re.compile(r"job stopped for the trial (\d+):(\d\d)")
RUNNING = re.compile(r"Trial · running (\d+):(\d\d)")
RUN = re.compile(r"run (\d+) (\d+):(\d\d)")


def seconds(found: re.Match[str] | None, what: str, shown: str) -> int:
    assert found, f"no {what} in {shown!r}"
    minutes, secs = found.groups()[-2:]
    return int(minutes) * 60 + int(secs)


async def test_the_header_and_the_trial_panel_tick_every_second_through_a_trial(
    tmp_path: Path,
) -> None:
    async with demo_dashboard(tmp_path / "run") as (app, pilot, _watched):
        await open_apply(pilot, app, KNOB)
        await pilot.press("y")
        header, panel = app.query_one(JobHeader), app.query_one(TrialPanel)

        def reading() -> tuple[str, str, str]:
            return str(header.render()), str(panel.border_title), str(panel.render())

        def measuring() -> bool:
            return RUN.search(reading()[2]) is not None

        await wait_until(pilot, measuring, "a measured run in progress", 120)
        first = reading()
        await pilot.pause(3.2)
        second = reading()
        assert app.trial_running, "the trial ended between the readings: too quick to judge"
        # The header's stopped clock and the trial's own went on, second by second.
        stopped = [seconds(STOPPED.search(r[0]), "stopped clock", r[0]) for r in (first, second)]
        assert 2 <= stopped[1] - stopped[0] <= 5
        assert "steps/s ↑" not in second[0] and "steps/s ↓" not in second[0]  # no live trend
        running = [seconds(RUNNING.search(r[1]), "trial clock", r[1]) for r in (first, second)]
        assert 2 <= running[1] - running[0] <= 5
        # The phase line moved too (the run's time so far, or a newer run).
        assert first[2] != second[2]
        await pilot.press("q")
        await app.workers.wait_for_complete()
    assert app.trial_outcomes and app.trial_outcomes[-1].cancelled
