"""`torchtop view` shows data and controls no process: on a trace and on a recorded run folder
it loads neither psutil nor any of `torchtop.trials` or `tuning` (nor `live`, `attach`,
`serve`, `exporters`, `jobs`, nor a session that launches or follows a job: only
`sessions.offline`, `analyze`'s own), and it reads a run folder once.

The probe runs the real command (`cli.main(["view", PATH])`) in a fresh interpreter, up to the
real dashboard, headless: Textual's own `App.run(headless=True, auto_pilot=...)`, whose pilot
notes the verdict the dashboard shows, then quits. Then it lists what was imported.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.tui.replay import SAMPLES, SyntheticRun, dataloader_bound

PROBE = """
import importlib, json, sys
from textual.app import App

if sys.argv[2]:
    importlib.import_module(sys.argv[2])
shown = []
run = App.run

def headless(self, **options):
    async def look_then_quit(pilot):
        await pilot.pause()
        shown.append(pilot.app.latest.report.verdict.bottleneck)
        await pilot.press("q")

    return run(self, headless=True, size=(160, 48), auto_pilot=look_then_quit)

App.run = headless
sys.stdout.isatty = lambda: True  # a user's terminal: else `view` prints its report instead
import torchtop.runs.nodes as nodes
reads = []
load_run = nodes.load_shared_run
nodes.load_shared_run = lambda root: reads.append(str(root)) or load_run(root)
import torchtop.cli as cli
status = cli.main(["view", sys.argv[1]])
process_control = (
    "psutil.", "torchtop.trials", "torchtop.tuning", "torchtop.live", "torchtop.attach",
    "torchtop.serve", "torchtop.exporters", "torchtop.jobs", "torchtop.sessions.watch",
    "torchtop.sessions.injecting", "torchtop.sessions.streams", "torchtop.sessions.tune",
    "torchtop.sessions.run_config",
)
print(json.dumps({
    "status": status,
    "shown": shown,
    "reads": len(reads),
    "loaded": sorted(m for m in sys.modules if m == "psutil" or m.startswith(process_control)),
}))
"""


def view_in_a_fresh_process(path: Path, preload: str = "") -> dict[str, Any]:
    result = subprocess.run(
        [sys.executable, "-c", PROBE, str(path), preload],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    seen: dict[str, Any] = json.loads(result.stdout.strip().splitlines()[-1])
    return seen


def recorded_run(tmp_path: Path) -> Path:
    run = SyntheticRun(tmp_path / "run", dataloader_bound())
    run.advance(30.0)
    run.close()
    return run.root


def test_the_probe_sees_process_control_once_something_imports_it(tmp_path: Path) -> None:
    # Guards the probe: had `view` imported the watched job, the same listing would show it.
    seen = view_in_a_fresh_process(SAMPLES / "dataloader_starved", "torchtop.sessions.watched")
    assert "torchtop.sessions.watched" in seen["loaded"]
    assert "psutil" in seen["loaded"]


def test_viewing_traces_loads_no_psutil_and_no_relaunch_code() -> None:
    seen = view_in_a_fresh_process(SAMPLES / "dataloader_starved")
    assert seen["status"] == 0 and seen["shown"] == ["dataloader"]
    assert seen["loaded"] == []


def test_viewing_a_recorded_run_loads_no_psutil_and_no_relaunch_code(tmp_path: Path) -> None:
    seen = view_in_a_fresh_process(recorded_run(tmp_path))
    assert seen["status"] == 0 and seen["shown"] == ["dataloader"]
    assert seen["loaded"] == []
    assert seen["reads"] == 1  # the report and the dashboard's samples from one read
