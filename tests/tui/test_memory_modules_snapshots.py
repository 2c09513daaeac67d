"""The Memory and Modules panels (SVG snapshots at 80x24 and 120x36) on a real H100 trace
recorded with `profile_memory=True` and Python stacks, and their absence on a trace without
them. Update with `--snapshot-update` only after reading the new SVGs."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from torchtop.sessions.offline import analyze_paths
from torchtop.tui.app import Dashboard
from torchtop.tui.frame import offline_frame

SIZES = {"80x24": (80, 24), "120x36": (120, 36)}
BERT = "tracelens/h100/gaunernst_bert-small-uncased__1016001.json.gz"
Compare = Callable[..., bool]


@pytest.fixture
def bert_app(shared: Path) -> Dashboard:
    return Dashboard(frame=offline_frame(analyze_paths([str(shared / BERT)])))


@pytest.mark.parametrize("size", SIZES)
def test_a_trace_with_memory_and_modules_shows_both_panels(
    snap_compare: Compare, bert_app: Dashboard, size: str
) -> None:
    assert snap_compare(bert_app, terminal_size=SIZES[size])


async def test_the_panels_show_only_what_the_trace_recorded(
    bert_app: Dashboard, offline_app: Dashboard
) -> None:
    async with bert_app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        assert bert_app.query_one("#memory").display
        assert bert_app.query_one("#modules").display
    async with offline_app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        assert not offline_app.query_one("#memory").display  # 2021 trace: no totals
        assert not offline_app.query_one("#modules").display
