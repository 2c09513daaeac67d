"""The confirm modal of `a`: the exact change a plan makes, or why a fix cannot be applied, and
the trial panel's lines; the plans are real (`plan_fix`), the modal runs in the real app."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
from msgspec.structs import replace
from rich.text import Text
from textual.pilot import Pilot
from textual.widgets import OptionList, Static

from tests.tui.conftest import LiveApp, advance
from torchtop.advice.machine import Machine
from torchtop.advice.plan import initial_plan, plan_fix
from torchtop.model.findings import Finding, Fix
from torchtop.model.report import Report
from torchtop.model.trials import Measured, Proposal, Stage, TrialEvent, TrialOutcome
from torchtop.runs.records import CliOption, LoaderSettings, Settings, ThreadSettings
from torchtop.tui.app import Dashboard
from torchtop.tui.apply import NEW_STYLE, OLD_STYLE, ApplyScreen, proposal_text
from torchtop.tui.details import FixDetailsScreen, details_text
from torchtop.tui.ranking import RankedFix
from torchtop.tui.widgets.fixlist import fix_prompt
from torchtop.tui.widgets.trial import TrialView, trial_text

TWO_CORES = Machine(logical_cores=2, physical_cores=2)
COMMAND = ["python", "train.py", "--num-workers", "0"]
WORKERS = Fix("dataloader.num_workers", 2, "override", "Load batches in 2 worker processes.")
OPTION = {"flags": ["--num-workers"], "dest": "num_workers", "type": "int", "default": 0,
          "value": 0}  # fmt: skip


def settings(*options: dict[str, Any]) -> Settings:
    return Settings(
        dataloader=LoaderSettings(num_workers=0, batch_size=32),
        threads=ThreadSettings(torch_num_threads=2),
        device="cpu",
        cli_options=[msgspec.convert(o, CliOption) for o in options],
    )


def proposal(fix: Fix, *options: dict[str, Any]) -> Proposal:
    before = initial_plan(COMMAND, {"PATH": "/usr/bin"}, "/work")
    planned = plan_fix(fix, before, settings(*options), TWO_CORES, argv=COMMAND[1:])
    return Proposal.of(fix, before, planned)


def styled_lines(text: Text) -> dict[str, str]:
    """Each line of the text, with the style of its first span ('' when unstyled)."""
    lines: dict[str, str] = {}
    for line in text.split("\n"):
        style = str(line.spans[0].style) if line.spans else ""
        lines[line.plain] = style
    return lines


def test_an_arg_fix_shows_the_old_command_in_red_and_the_new_one_in_green() -> None:
    lines = styled_lines(proposal_text(proposal(WORKERS, OPTION)))
    assert lines["old command: python train.py --num-workers 0"] == OLD_STYLE
    assert lines["new command: python train.py --num-workers 2"] == NEW_STYLE
    assert "  option --num-workers: 0 -> 2" in lines
    assert "environment: unchanged" in lines


def test_an_override_fix_shows_the_same_command_and_the_override_the_agent_applies() -> None:
    text = proposal_text(proposal(WORKERS)).plain
    assert "old command: python train.py --num-workers 0\n" in text
    assert "new command: python train.py --num-workers 0\n" in text
    assert "overrides (the agent applies them inside the job, and says so there):" in text
    assert "  dataloader.num_workers = 2\n" in text


def test_a_fix_the_rule_calls_an_override_is_named_once_by_the_route_its_plan_takes() -> None:
    """The rule says `override`; the script has `--num-workers`, so the plan rewrites it. The
    details said "[override]", "applies as override: the agent changes a library default" and
    then "(arg) option --num-workers: 0 -> 2"; now the kind is said once, as applied."""
    planned = proposal(WORKERS, OPTION)
    finding = Finding("starved", "dataloader", "high", "t", "m", "w", {}, (WORKERS,), ("r",))
    ranked = RankedFix(WORKERS, finding, 0.3, 0.3)
    details = details_text(ranked, COMMAND, [], planned).plain
    assert "override" not in details and "(arg)" not in details
    assert details.count("applies as arg: ") == 1
    assert "  option --num-workers: 0 -> 2" in details
    listed = fix_prompt(1, ranked, planned).plain
    assert "override" not in listed and listed.startswith("1 HIGH arg dataloader.num_workers = 2")
    # Without the option, the plan overrides, and says so the same way.
    details = details_text(ranked, COMMAND, [], proposal(WORKERS)).plain
    assert details.count("applies as override: ") == 1 and "arg" not in details.split("\n")[2]


def test_a_code_fix_is_shown_as_its_patch_and_said_to_be_never_applied() -> None:
    fix = Fix("code.torch_compile", "torch.compile(model)", "code", "Compile the model.")
    shown = proposal(fix)
    assert shown.after is None
    text = proposal_text(shown).plain
    assert text.startswith("This fix cannot be applied by torchtop: a change to the script")
    assert "+    model = torch.compile(model)" in text
    assert "old command" not in text


async def test_the_modal_offers_no_confirm_key_for_a_code_fix(live_app: LiveApp) -> None:
    app = live_app("loader")
    fix = Fix("code.torch_compile", "torch.compile(model)", "code", "Compile the model.")
    async with app.run_test(size=(80, 24)) as pilot:
        await advance(pilot, 2)
        confirmed: list[bool | None] = []
        app.push_screen(ApplyScreen(proposal(fix)), callback=confirmed.append)
        await pilot.pause()
        assert "y" not in app.screen.active_bindings
        await pilot.press("y", "enter")
        assert isinstance(app.screen, ApplyScreen)
        await pilot.press("escape")
        await pilot.pause()
    assert confirmed == [False]


async def test_the_modal_confirms_a_plan_with_y(live_app: LiveApp) -> None:
    app = live_app("loader")
    async with app.run_test(size=(80, 24)) as pilot:
        confirmed: list[bool | None] = []
        app.push_screen(ApplyScreen(proposal(WORKERS, OPTION)), callback=confirmed.append)
        await pilot.pause()
        assert app.screen.active_bindings["y"].enabled
        await pilot.press("y")
        await pilot.pause()
    assert confirmed == [True]


async def test_without_an_applier_the_apply_key_is_not_offered_and_applies_nothing(
    live_app: LiveApp,
) -> None:
    app = live_app("loader")
    async with app.run_test(size=(80, 24)) as pilot:
        await advance(pilot, 6)
        active = app.screen.active_bindings["a"]
        assert active.binding.action == "app.why_no_apply" and not active.binding.show
        await pilot.press("a")
        await pilot.pause()
        assert not isinstance(app.screen, ApplyScreen)
        assert all(w.name != "propose" for w in app.workers)


def test_the_trial_panel_shows_each_runs_rate_under_before_and_after() -> None:
    view = TrialView("option --num-workers: 0 -> 2")
    view = view.updated(Measured(1, "before-1", 4.1))
    view = view.updated(Measured(1, "after-1", 9.8))
    view = view.updated(Stage("starting the job with the fix"))
    lines = trial_text(view).plain.splitlines()
    assert lines == [
        "option --num-workers: 0 -> 2",
        "before 4.10 steps/s  │  after 9.80 steps/s",
        "starting the job with the fix",
    ]


def test_a_trial_that_could_not_run_says_so_and_that_the_job_runs_as_it_did() -> None:
    shown = proposal(WORKERS, OPTION)
    error = "the job could not be measured as it ran: boom"
    outcome = TrialOutcome(None, shown.before, Path("run/jobs/01"), error=error)
    view = TrialView("option --num-workers: 0 -> 2").finished(outcome)
    assert trial_text(view).plain.splitlines()[-1] == (
        "no trial: the job could not be measured as it ran: boom; the job runs as it did"
    )


class PlanningApplier:
    """Plans with the real `plan_fix` on a job whose agent reported `job_settings` (as
    `WatchedJob.propose` does with the live run's records); it never runs a trial."""

    def __init__(self, job_settings: Settings) -> None:
        self.settings = job_settings
        self.before = initial_plan(COMMAND, {"PATH": "/usr/bin"}, "/work")

    def propose(self, fix: Fix, report: Report) -> Proposal:
        planned = plan_fix(
            fix, self.before, self.settings, TWO_CORES, metrics=report.job.metrics, argv=COMMAND[1:]
        )
        return Proposal.of(fix, self.before, planned)

    def try_fix(self, proposal: Proposal, on_event: Callable[[TrialEvent], None]) -> TrialOutcome:
        raise AssertionError("no trial in these tests")

    def cancel(self, timeout_s: float = 0.0) -> bool:
        return True


async def listed(app: Dashboard, pilot: Pilot[Any]) -> tuple[str, str, str]:
    """The first fix's line, its preview and its details screen, as plain text."""
    await advance(pilot, 6)
    line = str(app.query_one("#fix-options", OptionList).get_option_at_index(0).prompt)
    preview = str(app.query_one("#fix-preview", Static).render())
    await pilot.press("enter")
    await pilot.pause()
    assert isinstance(app.screen, FixDetailsScreen)
    details = str(app.screen.query_one("#details-text", Static).render())
    return line, preview, details


async def test_the_list_shows_the_value_applying_a_fix_would_really_set(
    live_app: LiveApp,
) -> None:
    """The rule says 4 workers; planned for this job and machine the fix sets another value,
    and the list, its preview and the details all show that one, as the modal on `a` does."""
    applier = PlanningApplier(settings(OPTION))
    app = live_app("loader", applier=applier)
    async with app.run_test(size=(120, 40)) as pilot:
        line, preview, details = await listed(app, pilot)
        planned = app.latest.proposals[app.latest.fixes[0].key] if app.latest else None
    assert planned is not None and planned.after is not None
    value = planned.after.fixes[-1].value
    assert value != 4  # resolved from the rule's 4 for this job (else the test shows nothing)
    assert line.startswith(f"1 HIGH arg dataloader.num_workers = {value} ")
    assert f"option --num-workers: 0 -> {value}" in preview
    assert f"new command: python train.py --num-workers {value}" in details


def running_with(workers: int) -> Settings:
    job = settings({**OPTION, "value": workers})
    return replace(job, dataloader=LoaderSettings(num_workers=workers, batch_size=32))


async def test_a_fix_the_job_already_has_is_dimmed_and_says_why(live_app: LiveApp) -> None:
    """After a kept workers fix the job runs with the planned count, the finding may still
    fire, and the list must not offer the same change again as if it were new."""
    workers = 0
    for _ in range(5):  # apply the fix as planned until the plan has nothing left to change
        app = live_app("loader", applier=PlanningApplier(running_with(workers)))
        async with app.run_test(size=(120, 40)) as pilot:
            await advance(pilot, 6)
            assert app.latest is not None
            planned = app.latest.proposals[app.latest.fixes[0].key]
        if planned.after is None:
            break
        workers = int(planned.after.fixes[-1].value)  # type: ignore[call-overload]
    assert workers > 0
    app = live_app("loader", applier=PlanningApplier(running_with(workers)))
    async with app.run_test(size=(120, 40)) as pilot:
        line, preview, _ = await listed(app, pilot)
    assert line.endswith("· not applicable now")
    assert f"dataloader.num_workers is already {workers}" in preview


async def test_without_an_applier_the_list_shows_the_value_the_report_resolved(
    live_app: LiveApp,
) -> None:
    """No plan is made, yet the value is not the rule's literal 4: the live report carries each
    fix resolved for the job (sized for its 82% wait: 5), so list and details agree."""
    app = live_app("loader")
    async with app.run_test(size=(120, 40)) as pilot:
        line, _, details = await listed(app, pilot)
        assert app.latest is not None and not app.latest.proposals
        reported = app.latest.fixes[0].fix.value
    assert reported == 5
    assert line.startswith("1 HIGH override dataloader.num_workers = 5 ")
    assert details.startswith("dataloader.num_workers = 5\n")
    assert "not applicable" not in line
