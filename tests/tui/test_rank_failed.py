"""A torchrun job whose rank fails: the dashboard's Job failed panel shows that rank's own
error (what it raised), not torchrun's summary of it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.assess.test_ranks_as_the_job_knows_them import ASSERTED, TORCHRUN
from tests.conftest import WORKLOADS
from tests.tui.conftest import wait_until
from torchtop.diagnosis.rules import load_rules
from torchtop.jobs.job import Output, start
from torchtop.live.watch import LiveMonitor
from torchtop.model.report import Report
from torchtop.tui.app import Dashboard
from torchtop.tui.ticking import IntervalPacer
from torchtop.tui.widgets.jobend import JobEndPanel

pytestmark = pytest.mark.slow


async def test_the_dashboard_shows_the_failed_torchrun_rank_s_own_error(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    command = [*TORCHRUN, str(WORKLOADS / "ddp_asserts.py")]
    job = start(command, run_dir, "run", output=Output.log(run_dir / "job.log"))
    monitor = LiveMonitor(run_dir, load_rules(), job=job, kind="run")
    app = Dashboard(monitor, pacer=IntervalPacer(0.5), stay=True)
    async with app.run_test(size=(160, 40)) as pilot:
        panel = app.query_one(JobEndPanel)
        await wait_until(pilot, lambda: panel.display, "job end panel", 120)
        shown = str(panel.render())
        assert "rank 1 failed first (exit 1); its error:" in shown, shown
        assert ASSERTED in shown, shown
        await pilot.press("q")
    assert isinstance(app.return_value, Report)
