"""The live dashboard, headless (Textual's pilot), on one planted job: what its Devices panel
shows once GPU samples arrived.

    python dash_check.py --run-dir DIR --for S [--rules DIR] -- python jobs/fp32_matmul.py

Starts the job as `torchtop run` does (agent, collectors, live monitor), renders the dashboard
in `App.run_test`, waits until the panel shows a device's lines and at least `--for` seconds
passed, then prints one line `KIT-PANEL {json}`: the panel's text, the wall time it was read
and the device name of the newest `gpu` sample. The job is stopped either way.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any

from torchtop.diagnosis.rules import load_rules
from torchtop.jobs.job import Output, start
from torchtop.live.collect import start_collectors
from torchtop.live.watch import LiveMonitor
from torchtop.tui.app import Dashboard
from torchtop.tui.ticking import IntervalPacer
from torchtop.tui.widgets.devices import DevicesPanel

PANEL_LINE = "KIT-PANEL "
SIZE = (140, 48)


def panel_text(app: Dashboard) -> str:
    panel = app.query_one(DevicesPanel)
    return str(panel.render()) if panel.frame is not None else ""


def device_name(app: Dashboard) -> str | None:
    panel = app.query_one(DevicesPanel)
    if panel.frame is None or not panel.frame.gpu:
        return None
    devices = panel.frame.gpu[-1].devices
    return devices[0].name if devices else None


async def watch(
    command: list[str], run_dir: Path, rules: Path | None, seconds: float
) -> dict[str, Any]:
    job = start(command, run_dir, "run", output=Output.log(run_dir.parent / "job.log"))
    collectors = start_collectors(job.layout, job.pid, with_agent=True)
    monitor = LiveMonitor(run_dir, load_rules(rules), job=job, kind="run")
    app = Dashboard(monitor, pacer=IntervalPacer(0.5))
    began, text = time.monotonic(), ""
    try:
        async with app.run_test(size=SIZE) as pilot:
            while time.monotonic() - began < seconds + 30:
                await pilot.pause(0.5)
                text = panel_text(app)
                if time.monotonic() - began >= seconds and device_name(app) is not None:
                    break
            return {"text": text, "t": time.time(), "name": device_name(app)}
    finally:
        job.stop()
        collectors.stop()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run-dir", type=Path, required=True)
    parser.add_argument("--for", dest="seconds", type=float, default=20.0)
    parser.add_argument("--rules", type=Path, default=None)
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no job command after --")
    shown = asyncio.run(watch(command, args.run_dir, args.rules, args.seconds))
    print(PANEL_LINE + json.dumps(shown), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
