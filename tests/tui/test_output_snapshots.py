"""How `o` looks at 80x24 (SVG snapshot): a two-rank torchrun job's merged log, its stderr lines
marked, the log's path in the title. The log is planted (fixed lines, so the picture is the same
each time) in the replayed run's folder; `tests/tui/test_output_screen.py` drives a real job."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.widgets import RichLog

from tests.tui.conftest import LiveApp, advance
from torchtop.runs.output_tail import stderr_marks
from torchtop.tui.outputscreen import OutputScreen

Compare = Callable[..., bool]


def plant_log(run_dir: Path) -> None:
    """28 lines as torchrun's `--tee 3` writes them, every seventh from stderr."""
    lines, marks, offset = [], [], 0
    for index in range(28):
        rank = index % 2
        if index % 7 == 6:
            line = f"[default{rank}]:UserWarning: step {index // 2} took 1.9 s, data wait 1.4 s"
            marks.append(f"{offset} {offset + len(line) + 1}")
        else:
            line = f"[default{rank}]:step {index // 2:4d}  loss {2.5 - index * 0.05:.4f}  lr 3.0e-4"
        lines.append(line)
        offset += len(line) + 1
    (run_dir / "job.log").write_text("".join(f"{line}\n" for line in lines))
    stderr_marks(run_dir / "job.log").write_text("".join(f"{mark}\n" for mark in marks))


async def opened(pilot: Pilot[Any]) -> None:
    """`o`, then once the lines are drawn and the view has followed them to the end."""
    await advance(pilot, 2)
    await pilot.press("o")
    screen = pilot.app.screen
    assert isinstance(screen, OutputScreen)
    log = screen.query_one(RichLog)
    for _ in range(200):
        if screen.reads and log.lines and 0 < log.max_scroll_y == log.scroll_y:
            break
        await asyncio.sleep(0.05)
    else:
        raise AssertionError(f"the view is at row {log.scroll_y} of {log.max_scroll_y}, not last")
    await pilot.pause()


def test_the_jobs_output_looks_right_at_80x24(
    snap_compare: Compare, live_app: LiveApp, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # the title's path, the same on every machine: run/job.log
    app = live_app("loader", output_dir=Path("run"))
    plant_log(tmp_path / "run")
    assert snap_compare(app, terminal_size=(80, 24), run_before=opened)
