"""The kit's dashboard check reads the real dashboard: a replayed run with one GPU, rendered at
the size dash_check.py gives it, shows the device's name, utilisation and memory in the lines
`parse_panel` reads (the detailed lines: a short panel would drop the name)."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from pathlib import Path

from dash_check import SIZE, device_name, panel_text
from kit_checks import panel_shows, parse_panel

from tests.tui.conftest import ManualPacer, advance, scenario_replay
from tests.tui.replay import dataloader_bound
from torchtop.tui.app import Dashboard


async def rendered(app: Dashboard) -> tuple[str, str | None]:
    async with app.run_test(size=SIZE) as pilot:
        await advance(pilot, 6)
        return panel_text(app), device_name(app)


def test_the_devices_panel_at_the_kits_size_shows_what_the_check_reads(tmp_path: Path) -> None:
    replay = scenario_replay(tmp_path, replace(dataloader_bound(), gpus=1))
    app = Dashboard(replay.monitor, pacer=ManualPacer(replay.elapse))
    text, name = asyncio.run(rendered(app))
    newest = replay.run.root / "samples" / "gpu.jsonl"
    assert name == "NVIDIA A100-SXM4-40GB" and newest.is_file()
    utilization, used = parse_panel(text)
    assert utilization is not None and used is not None
    check = panel_shows("replay", text, name, utilization, used / 2**20)
    assert check.passed is True, check.figure
