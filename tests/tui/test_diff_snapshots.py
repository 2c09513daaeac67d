"""How `torchtop diff A B` looks in a terminal (SVG snapshots at 80x24 and 120x36): the shared
ResNet-50 num_workers 0/4 twins side by side. Fixed traces, labelled by their folder names (not
the machine's paths), so the snapshots are the same everywhere. Update with
`pytest tests/tui/test_diff_snapshots.py --snapshot-update` only after reading the new SVGs."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import RESNET_NW0, RESNET_NW4, analyze_json
from torchtop.model.diff import DiffSide
from torchtop.report.diff import changes
from torchtop.tui.diffscreen import TITLE_WIDTH, DiffApp, tail

SIZES = {"80x24": (80, 24), "120x36": (120, 36)}
Compare = Callable[..., bool]


@pytest.fixture(scope="module")
def twin_changes(shared: Path) -> dict[str, Any]:
    a = DiffSide(analyze_json(shared / RESNET_NW0), "resnet50_num_workers_0")
    b = DiffSide(analyze_json(shared / RESNET_NW4), "resnet50_num_workers_4")
    return changes(a, b)


def with_settings(report: dict[str, Any], workers: int) -> dict[str, Any]:
    """A twin's report as a recorded run's would carry it: its command and its settings."""
    options = [{"dest": "workers", "flags": ["-j", "--workers"], "value": workers}]
    settings = {
        "env": {"OMP_NUM_THREADS": "4"}, "overrides": {}, "agent": True,
        "dataloader": {"num_workers": workers, "pin_memory": True, "batch_size": 32,
                       "persistent_workers": False, "prefetch_factor": 2 if workers else None},
        "threads": {"torch_num_threads": 4}, "device": "cuda:0", "amp": False,
        "compiled": False, "options": options,
    }  # fmt: skip
    command = ["python", "main.py", "-a", "resnet50", "-j", str(workers), "imagenet"]
    return {**report, "source": {**report["source"], "command": command}, "settings": settings}


@pytest.fixture(scope="module")
def recorded_changes(shared: Path) -> dict[str, Any]:
    a = DiffSide(with_settings(analyze_json(shared / RESNET_NW0), 0), "resnet50_num_workers_0")
    b = DiffSide(with_settings(analyze_json(shared / RESNET_NW4), 4), "resnet50_num_workers_4")
    return changes(a, b)


def test_settings_that_differ_come_first_in_the_changes_at_120x36(
    snap_compare: Compare, recorded_changes: dict[str, Any]
) -> None:
    """As from two recorded runs: `-j 0 -> 4` and `dataloader.num_workers 0 -> 4` on top,
    the ratio with its noise judgement, then where the time moved."""
    assert snap_compare(DiffApp(recorded_changes), terminal_size=SIZES["120x36"])


@pytest.mark.parametrize("size", SIZES)
def test_the_resnet_twins_side_by_side_look_right(
    snap_compare: Compare, twin_changes: dict[str, Any], size: str
) -> None:
    assert snap_compare(DiffApp(twin_changes), terminal_size=SIZES[size])


async def test_the_changes_scroll_down_at_80x24_and_q_quits(twin_changes: dict[str, Any]) -> None:
    app = DiffApp(twin_changes)
    async with app.run_test(size=(80, 24)) as pilot:
        box = app.query_one("#changes")
        assert box.max_scroll_y > 0  # more than fits at 80x24
        await pilot.press("down", "down", "down")
        await pilot.pause()
        assert box.scroll_y == 3
        await pilot.press("q")
    assert app.return_code == 0


def test_a_long_path_in_a_sides_title_keeps_its_end_which_tells_the_runs_apart() -> None:
    path = "/work/shared/traces/kineto-tb-plugin/resnet50_num_workers_0"
    shown = tail(path)
    assert len(shown) == TITLE_WIDTH and shown == "…" + path[-(TITLE_WIDTH - 1) :]
    assert tail("short/path") == "short/path"
