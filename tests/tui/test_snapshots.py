"""How the dashboard looks (SVG snapshots, pytest-textual-snapshot) at 80x24 and 160x48: a
DataLoader-bound run, a communication-bound 2-rank run, and an offline GPU trace.

The runs are replayed tick by tick on a simulated clock, so every snapshot is the same each
time. Update with `pytest tests/tui --snapshot-update` only after reading the new SVGs.
`docs/dashboard.svg` (in the README) is the 160x48 DataLoader-bound snapshot.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.screen import Screen
from textual.widget import Widget

from tests.tui.conftest import LiveApp, advance, wait_until
from torchtop.tui.app import Dashboard
from torchtop.tui.details import FixDetailsScreen

SIZES = {"80x24": (80, 24), "160x48": (160, 48)}
TICKS = 24
Compare = Callable[..., bool]


def replayed(
    ticks: int, keys: tuple[str, ...] = (), shows: type[Screen[Any]] | None = None
) -> Callable[[Pilot[Any]], Any]:
    """`ticks` replayed, then `keys` pressed; with `shows`, until that screen is up and drawn
    (a key's screen comes after a chain of messages that a loaded machine may not have run
    through by the snapshot's own pauses)."""

    async def run_before(pilot: Pilot[Any]) -> None:
        await advance(pilot, ticks)
        await pilot.press(*keys)
        if shows is not None:
            await wait_until(pilot, lambda: _drawn(pilot.app.screen, shows), shows.__name__, 30)
        # Two more turns: a border caption set after a paint (`ListPanel.caption`) lands on
        # the panel as it was resized, not one paint late (seen under load: the Hot stacks
        # caption of the dashboard behind the details, cut at its earlier width).
        await pilot.pause()
        await pilot.pause()

    return run_before


def _drawn(screen: Screen[Any], kind: type[Screen[Any]]) -> bool:
    """The screen is up with every widget it composed mounted."""
    return isinstance(screen, kind) and all(w.is_mounted for w in screen.walk_children(Widget))


@pytest.mark.parametrize("size", SIZES)
def test_a_dataloader_bound_run_looks_right(
    snap_compare: Compare, live_app: LiveApp, size: str
) -> None:
    assert snap_compare(live_app("loader"), terminal_size=SIZES[size], run_before=replayed(TICKS))


@pytest.mark.parametrize("size", SIZES)
def test_a_communication_bound_two_rank_run_looks_right(
    snap_compare: Compare, live_app: LiveApp, size: str
) -> None:
    assert snap_compare(live_app("comm"), terminal_size=SIZES[size], run_before=replayed(TICKS))


@pytest.mark.parametrize("size", SIZES)
def test_an_offline_gpu_trace_looks_right(
    snap_compare: Compare, offline_app: Dashboard, size: str
) -> None:
    assert snap_compare(offline_app, terminal_size=SIZES[size])


def test_the_details_of_a_fix_look_right(snap_compare: Compare, live_app: LiveApp) -> None:
    app = live_app("loader")
    shown = replayed(6, ("enter",), FixDetailsScreen)
    assert snap_compare(app, terminal_size=(80, 24), run_before=shown)


def test_the_readme_image_is_the_current_dataloader_snapshot() -> None:
    snapshots = Path(__file__).parent / "__snapshots__" / "test_snapshots"
    current = snapshots / "test_a_dataloader_bound_run_looks_right[160x48].svg"
    readme_image = Path(__file__).resolve().parents[2] / "docs" / "dashboard.svg"
    assert readme_image.read_text() == current.read_text(), (
        "docs/dashboard.svg is out of date: copy the 160x48 DataLoader snapshot over it"
    )
