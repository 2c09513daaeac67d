"""The dashboard at each step of trying a fix, as docs/how-it-decides.md shows it (SVG
snapshots, pytest-textual-snapshot, 120x36): the confirm modal of `a`, the trial running, the
trial kept. The verdict and the fix's details are test_snapshots.py's.

The DataLoader-bound run is replayed as in test_snapshots.py; `a` is planned by the real
`plan_fix` (test_apply_screen's `PlanningApplier`); the trial's views are built from real
values (a `Trial` made by tests/report/test_trials.py), as the trial worker's messages build
them. Update with `pytest tests/tui/test_step_snapshots.py --snapshot-update` only after
reading the new SVGs, then copy them to docs/how-it-decides/ (a test below checks).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot

from tests.report.test_trials import trial
from tests.tui.conftest import LiveApp, advance
from tests.tui.test_apply_screen import OPTION, PlanningApplier, settings
from torchtop.model.trials import Measured, Stage, TrialOutcome
from torchtop.tui.app import Dashboard
from torchtop.tui.widgets.trial import TrialPanel, TrialView

SIZE = (120, 36)
TICKS = 24
CHANGE = "option --num-workers: 0 -> 5"  # the value `a` planned for this job
Compare = Callable[..., bool]
SNAPSHOTS = Path(__file__).parent / "__snapshots__" / "test_step_snapshots"
DOC_IMAGES = Path(__file__).resolve().parents[2] / "docs" / "how-it-decides"


def planning_app(live_app: LiveApp) -> Dashboard:
    return live_app("loader", applier=PlanningApplier(settings(OPTION)))


def show_trial(view: TrialView) -> Callable[[Pilot[Any]], Any]:
    async def run_before(pilot: Pilot[Any]) -> None:
        await advance(pilot, TICKS)
        app = pilot.app
        assert isinstance(app, Dashboard)
        app.query_one(TrialPanel).view = view
        app.arrange_bottom()
        await pilot.pause()

    return run_before


def test_a_opens_the_exact_change_to_confirm(snap_compare: Compare, live_app: LiveApp) -> None:
    async def run_before(pilot: Pilot[Any]) -> None:
        await advance(pilot, TICKS)
        await pilot.press("a")
        await pilot.pause(0.2)

    assert snap_compare(planning_app(live_app), terminal_size=SIZE, run_before=run_before)


def test_the_trial_panel_shows_each_measured_run(snap_compare: Compare, live_app: LiveApp) -> None:
    view = TrialView(CHANGE)
    for event in (
        Stage("measuring the job as it ran, then with the fix"),
        Measured(1, "before-1", 4.92),
        Measured(1, "after-1", 9.81),
    ):
        view = view.updated(event)
    app = planning_app(live_app)
    assert snap_compare(app, terminal_size=SIZE, run_before=show_trial(view))


def test_the_trial_panel_shows_the_kept_fix(snap_compare: Compare, live_app: LiveApp) -> None:
    kept = trial(True, 0.2, 0.1)  # 5 -> 10 steps/s: 2.00x
    view = TrialView(CHANGE).finished(TrialOutcome(kept, kept.plan_after, Path("run/jobs/01")))
    app = planning_app(live_app)
    assert snap_compare(app, terminal_size=SIZE, run_before=show_trial(view))


PICTURES = {
    "details.svg": SNAPSHOTS.parent / "test_snapshots" / "test_the_details_of_a_fix_look_right.svg",
    "confirm.svg": SNAPSHOTS / "test_a_opens_the_exact_change_to_confirm.svg",
    "trial-running.svg": SNAPSHOTS / "test_the_trial_panel_shows_each_measured_run.svg",
    "trial-kept.svg": SNAPSHOTS / "test_the_trial_panel_shows_the_kept_fix.svg",
}


@pytest.mark.parametrize("picture", PICTURES)
def test_the_docs_pictures_are_the_current_snapshots(picture: str) -> None:
    current = PICTURES[picture]
    assert (DOC_IMAGES / picture).read_text() == current.read_text(), (
        f"docs/how-it-decides/{picture} is out of date: copy {current.name} over it"
    )
