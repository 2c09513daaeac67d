"""The dashboard's Efficiency panel at 80x24 on a live CPU job of known matmuls (its window a
real one of `workloads/matmul_job.py`, with shapes; its CPU peak a fixed figure in the context):
MFU, the matmul's roofline share and TFLOP/s, whole beside the other panels. Update with
`pytest tests/tui/test_efficiency_snapshot.py --snapshot-update` only after reading the SVG."""

from __future__ import annotations

from collections.abc import Callable

from tests.tui.conftest import LiveApp, advance, panel_text
from tests.tui.test_snapshots import replayed
from tests.workloads.matmul_job import FLOPS_PER_STEP, K, M, N
from torchtop.tui.widgets.panel import Panel

Compare = Callable[..., bool]
TICKS = 12


def test_the_efficiency_of_known_matmuls_looks_right_at_80x24(
    snap_compare: Compare, live_app: LiveApp
) -> None:
    assert snap_compare(live_app("matmul"), terminal_size=(80, 24), run_before=replayed(TICKS))


async def test_the_panel_says_the_mfu_and_the_matmuls_roofline_share(live_app: LiveApp) -> None:
    app = live_app("matmul")
    async with app.run_test(size=(80, 24)) as pilot:
        await advance(pilot, TICKS)
        frame = app.query_one("#efficiency", Panel).frame
        text = panel_text(app, "#efficiency")
    assert frame is not None
    efficiency = frame.report.job.efficiency
    assert efficiency is not None and efficiency.mfu is not None
    assert efficiency.flops_per_step == FLOPS_PER_STEP
    (mm,) = efficiency.ops
    assert mm.roofline_fraction is not None
    assert f"MFU {efficiency.mfu:.1%} fp32 of 0.08 TFLOP/s" in text
    assert f"{mm.roofline_fraction:.0%} mm {M}x{K},{K}x{N}" in text
