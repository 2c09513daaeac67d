"""`m` on the live dashboard: the request every agent answers, the Modules panel's progress
while the agents time their modules, then their tree, said to be host time; `m` is not offered
where no job runs. A replayed run stands in for the job: what an agent writes is written."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
import pytest
from textual.pilot import Pilot

from tests.tui.conftest import ManualPacer, advance, panel_text, scenario_replay
from tests.tui.replay import START_T, dataloader_bound
from torchtop.runs.layout import RunLayout
from torchtop.runs.records import ModulesStarted, ModuleTimes, ModuleTiming
from torchtop.tui.app import Dashboard
from torchtop.tui.helpscreen import help_text

PERIOD = 20


def _times(first_step: int) -> ModuleTimes:
    timing = [
        ModuleTiming(path="Net_0/Linear_0", calls=PERIOD, forward_s=0.2, forward_self_s=0.2),
        ModuleTiming(path="Net_0", calls=PERIOD, forward_s=0.5, forward_self_s=0.3),
    ]
    last = first_step + PERIOD - 1
    return ModuleTimes(
        t=START_T, first_step=first_step, last_step=last, steps=PERIOD, device="cpu", modules=timing
    )


async def test_m_asks_the_agents_and_the_panel_shows_progress_then_the_host_timed_tree(
    tmp_path: Path,
) -> None:
    replay = scenario_replay(tmp_path, dataloader_bound())
    app = Dashboard(replay.monitor, pacer=ManualPacer(replay.elapse))
    request = RunLayout(replay.run.root).modules_request
    pid = replay.run.scenario.ranks[0].pid
    async with app.run_test(size=(120, 36)) as pilot:
        await advance(pilot, 2)
        assert not app.query_one("#modules").display
        await pilot.press("m")
        assert request.is_file()
        first = replay.run.steps
        replay.run.agent(pid).write(ModulesStarted(t=START_T, first_step=first, steps=PERIOD))
        await advance(pilot, 1)
        timed = replay.run.steps - first
        assert 0 < timed < PERIOD
        assert app.query_one("#modules").display
        assert f"timing modules: {timed}/{PERIOD} steps" in panel_text(app, "#modules")
        replay.run.agent(pid).write(_times(first))
        await advance(pilot, 1)
        shown = panel_text(app, "#modules")
    assert "timing modules" not in shown
    assert f"host time, steps {first}-{first + PERIOD - 1}, forward only" in shown
    assert "25.0" in shown and "Net_0" in shown  # 0.5 s over 20 steps
    assert "10.0" in shown and "Linear_0" in shown


async def test_m_is_neither_offered_nor_active_where_no_job_runs(offline_app: Dashboard) -> None:
    async with offline_app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert offline_app.check_action("time_modules", ()) is False
    assert "time each module's forward" in help_text().plain


async def test_m_before_any_agent_step_says_why_and_asks_nothing(tmp_path: Path) -> None:
    replay = scenario_replay(tmp_path, dataloader_bound())
    app = Dashboard(replay.monitor, pacer=ManualPacer())
    async with app.run_test(size=(80, 24)) as pilot:
        await advance(pilot, 1)
        assert app.latest is not None and app.latest.step is None
        await pilot.press("m")
        await pilot.pause()
        said = [n.message for n in app._notifications]
    assert not RunLayout(replay.run.root).modules_request.exists()
    assert any("only a job with torchtop's agent" in m for m in said)


SIZES = {"80x24": (80, 24), "120x36": (120, 36)}
GPT = (
    ("GPT_0/Embedding_0", 0.004, 0.004),
    ("GPT_0/Block_0/LayerNorm_0", 0.010, 0.010),
    ("GPT_0/Block_0/CausalSelfAttention_0/Linear_0", 0.030, 0.030),
    ("GPT_0/Block_0/CausalSelfAttention_0/Linear_1", 0.020, 0.020),
    ("GPT_0/Block_0/CausalSelfAttention_0", 0.070, 0.020),
    ("GPT_0/Block_0/MLP_0/Linear_2", 0.040, 0.040),
    ("GPT_0/Block_0/MLP_0/GELU_0", 0.010, 0.010),
    ("GPT_0/Block_0/MLP_0/Linear_3", 0.030, 0.030),
    ("GPT_0/Block_0/MLP_0", 0.082, 0.002),
    ("GPT_0/Block_0", 0.164, 0.002),
    ("GPT_0/Linear_4", 0.012, 0.012),
    ("GPT_0", 0.184, 0.004),
)


@pytest.mark.parametrize("size", SIZES)
def test_the_live_modules_panel_looks_right(
    snap_compare: Callable[..., bool], tmp_path: Path, size: str
) -> None:
    replay = scenario_replay(tmp_path, dataloader_bound())
    app = Dashboard(replay.monitor, pacer=ManualPacer(replay.elapse))
    pid = replay.run.scenario.ranks[0].pid

    async def run_before(pilot: Pilot[Any]) -> None:
        await advance(pilot, 8)
        first = replay.run.steps - PERIOD
        modules = [
            ModuleTiming(path=p, calls=PERIOD, forward_s=total, forward_self_s=own)
            for p, total, own in GPT
        ]
        times = msgspec.structs.replace(_times(first), modules=modules)
        replay.run.agent(pid).write(times)
        await advance(pilot, 1)

    assert snap_compare(app, terminal_size=SIZES[size], run_before=run_before)
