"""One resolved value on every surface a fix is shown on.

The rule asks for at least 4 DataLoader workers; for a job that waits on data 82% of each step
the planner sizes that to 5. The dashboard's list, its preview, the details screen, the confirm
modal's title and body, the headless progress line, the text and JSON reports and the trial
record each once took the value from a different place (4 in one, 5 in the next). Here the
real dashboard runs over a replayed run, with fixes planned by the real `plan_fix` on the same
job, and every surface must say 5. A fix the job already runs with is not offered at all.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from msgspec.structs import replace
from textual.widgets import OptionList, Static

from tests.tui.conftest import LiveApp, advance
from tests.tui.replay import dataloader_bound
from torchtop.advice.machine import Machine, cached_machine
from torchtop.advice.plan import initial_plan, plan_fix
from torchtop.advice.resolve import resolve_verdict
from torchtop.diagnosis.engine import diagnose
from torchtop.diagnosis.rules import load_rules
from torchtop.live.headless import progress_line
from torchtop.model.analysis import RankAnalysis
from torchtop.model.findings import Fix
from torchtop.model.report import Report
from torchtop.model.trials import Proposal, TrialEvent, TrialOutcome
from torchtop.report import report_to_json
from torchtop.report.text import render_text
from torchtop.runs.records import LoaderSettings, Settings
from torchtop.tui.apply import ApplyScreen
from torchtop.tui.details import FixDetailsScreen

SCENARIO = dataloader_bound()
KNOB = "dataloader.num_workers"


class SameJobApplier:
    """Plans with the real `plan_fix` on the replayed job's own settings and command, as
    `WatchedJob.propose` does with the live run's records; it never runs a trial."""

    def __init__(self) -> None:
        self.before = initial_plan(SCENARIO.command, {"PATH": "/usr/bin"}, "/work")

    def propose(self, fix: Fix, report: Report) -> Proposal:
        planned = plan_fix(
            fix,
            self.before,
            SCENARIO.settings,
            cached_machine(),
            metrics=report.job.metrics,
            argv=SCENARIO.command[1:],
        )
        return Proposal.of(fix, self.before, planned)

    def try_fix(self, proposal: Proposal, on_event: Callable[[TrialEvent], None]) -> TrialOutcome:
        raise AssertionError("no trial in this test")

    def cancel(self, timeout_s: float = 0.0) -> bool:
        return True


async def test_every_surface_shows_the_one_resolved_worker_count(live_app: LiveApp) -> None:
    app = live_app("loader", applier=SameJobApplier())
    async with app.run_test(size=(120, 40)) as pilot:
        await advance(pilot, 6)
        assert app.latest is not None
        report = app.latest.report
        line = str(app.query_one("#fix-options", OptionList).get_option_at_index(0).prompt)
        preview = str(app.query_one("#fix-preview", Static).render())
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, FixDetailsScreen)
        details = str(app.screen.query_one("#details-text", Static).render())
        await pilot.press("a")
        for _ in range(50):
            await pilot.pause()
            if isinstance(app.screen, ApplyScreen):
                break
        modal = app.screen
        assert isinstance(modal, ApplyScreen)
        title = str(modal.query_one("#apply").border_title)
        body = str(modal.query_one("#apply-text", Static).render())
        after = modal.proposal.after
    fix = report.verdict.findings[0].fixes[0]
    assert (fix.knob, fix.value) == (KNOB, 5)  # the rule's 4, sized for the measured wait
    assert line.startswith(f"1 HIGH arg {KNOB} = 5 ")  # as the plan applies it: the option
    assert "option --num-workers: 0 -> 5" in preview
    assert details.startswith(f"{KNOB} = 5\n")
    assert title == f"Apply · {KNOB} = 5"
    assert "option --num-workers: 0 -> 5" in body
    assert f"fix: {KNOB} = 5" in progress_line(report, report.verdict, 10.0)
    assert f"→ {KNOB} = 5  [override]  {fix.description}" in render_text(report)
    reported = report_to_json(report)["findings"][0]["fixes"][0]
    assert (reported["knob"], reported["value"]) == (KNOB, 5)
    assert after is not None and after.fixes[-1].value == 5  # the trial record's
    assert after.fixes[-1].description == fix.description


def test_a_fix_the_job_already_runs_with_is_not_offered_in_the_line_or_the_report() -> None:
    """The demo's job after a kept fix runs with 8 workers and still waits 30% of each step:
    sized again the fix asks for 8, which is what it has, so neither the headless line nor
    the report offers it as new."""
    metrics: dict[str, Any] = {
        "steps_count": 30,
        "has_step_markers": True,
        "step_mean_ms": 40.0,
        "dataloader_share": 0.3,
        "dataloader_num_workers": 8,
    }
    tree = load_rules()
    verdict = diagnose(tree, metrics)
    assert any(f.knob == KNOB for finding in verdict.findings for f in finding.fixes)
    settings = Settings(dataloader=LoaderSettings(num_workers=8, batch_size=32), device="cpu")
    resolved = resolve_verdict(verdict, settings, Machine(2, 2), metrics)
    assert all(f.knob != KNOB for finding in resolved.findings for f in finding.fixes)
    assert resolved.findings, "the finding stays: the job still waits on data"
    job = RankAnalysis(None, "job", (), (), (), {"dataloader": 0.3}, metrics)
    report = Report(source_kind="run", paths=(), job=job, verdict=resolved)
    line = progress_line(report, resolved, 30.0)
    assert "verdict dataloader" in line and KNOB not in line
    assert KNOB not in render_text(report)
    fewer = resolve_verdict(verdict, replace(settings, dataloader=LoaderSettings(num_workers=2)),
                            Machine(2, 2), metrics)  # fmt: skip
    offered = [f for finding in fewer.findings for f in finding.fixes if f.knob == KNOB]
    assert [f.value for f in offered] == [4]  # 2 / 0.7 -> 3, raised to the rule's floor of 4
