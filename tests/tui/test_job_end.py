"""`run`'s dashboard stays once the job has ended: a job that crashed shows how it ended and
its traceback's last lines (every box whole at 80x24), one that ended well its final figures,
until `q`; without `stay` (`--for`, and the other live verbs) the dashboard closes by itself."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.conftest import RULES_DIR, WORKLOADS
from tests.tui.boxes import broken_boxes, screen_lines
from tests.tui.conftest import wait_until
from tests.workloads.crashes import LAST_LINE
from torchtop.diagnosis.rules import load_rules
from torchtop.jobs.job import Output, start
from torchtop.live.watch import LiveMonitor
from torchtop.model.report import JobExit, Report
from torchtop.tui.app import Dashboard
from torchtop.tui.ticking import IntervalPacer
from torchtop.tui.widgets.jobend import JobEndPanel, job_end_text

pytestmark = pytest.mark.slow
JOBS = WORKLOADS
CRASHES = [sys.executable, str(JOBS / "crashes.py")]
ENDS_WELL = [sys.executable, "-c", "print('done')"]


def dashboard(tmp_path: Path, command: list[str], stay: bool) -> Dashboard:
    run_dir = tmp_path / "run"
    job = start(command, run_dir, "run", output=Output.log(run_dir / "job.log"))
    monitor = LiveMonitor(run_dir, load_rules(RULES_DIR), job=job, kind="run")
    return Dashboard(monitor, pacer=IntervalPacer(0.5), stay=stay)


async def test_a_crashed_job_stays_on_screen_with_its_traceback_until_q(tmp_path: Path) -> None:
    app = dashboard(tmp_path, CRASHES, stay=True)
    async with app.run_test(size=(80, 24)) as pilot:
        panel = app.query_one(JobEndPanel)
        await wait_until(pilot, lambda: panel.display, "job end panel", 120)
        await pilot.pause()
        screen = screen_lines(app)
        assert broken_boxes(screen) == [], "\n".join(screen)  # at 80x24 too, every box whole
        assert LAST_LINE in "\n".join(screen)  # the cause on screen, whatever folded for it
        shown = str(panel.render())
        assert "the job crashed with exit status 1" in shown
        assert LAST_LINE in shown and str(tmp_path / "run" / "job.log") in shown
        assert app.latest is not None and app.latest.report.exit is not None  # the final report
        await pilot.pause(1.5)
        assert app.is_running  # nobody pressed q yet
        assert not app.can_apply  # nothing to apply to a job that has ended
        await pilot.press("q")
    assert isinstance(app.return_value, Report)
    ending = app.return_value.exit
    assert ending is not None and ending.status == 1 and ending.stderr_tail[-1] == LAST_LINE


async def test_a_job_that_ended_well_stays_with_its_final_figures(tmp_path: Path) -> None:
    app = dashboard(tmp_path, ENDS_WELL, stay=True)
    async with app.run_test(size=(80, 24)) as pilot:
        panel = app.query_one(JobEndPanel)
        await wait_until(pilot, lambda: panel.display, "job end panel", 60)
        assert "the job exited with exit status 0" in str(panel.render())
        assert app.is_running
        await pilot.press("q")
    assert isinstance(app.return_value, Report)


async def test_without_stay_the_dashboard_closes_when_the_job_ends(tmp_path: Path) -> None:
    app = dashboard(tmp_path, ENDS_WELL, stay=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until(pilot, lambda: not app.is_running, "the dashboard to close", 60)
    assert isinstance(app.return_value, Report)


def test_a_job_torchtop_stopped_reads_as_a_stop_not_as_its_signal() -> None:
    """`--for`, a trial's end or `q` stop the job with SIGINT: the panel says it was torchtop."""
    stopped = JobExit(how="stopped", signal="SIGINT", duration_s=12.4)
    text = job_end_text(stopped).plain
    assert text.startswith("the job was stopped by torchtop after 12 s"), text
    assert "SIGINT" not in text
    crashed = job_end_text(JobExit(how="crashed", status=1, stderr_tail=("boom",))).plain
    assert crashed.startswith("the job crashed with exit status 1"), crashed
