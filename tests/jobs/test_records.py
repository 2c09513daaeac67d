"""One `run.json` whoever launches: `run`, `attach` and a tune's measured run write the same
fields, the host named as the agent names it."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from torchtop.advice.plan import initial_plan
from torchtop.jobs.job import start_plan
from torchtop.model.plan import AppliedFix
from torchtop.runs.layout import RUN_SCHEMA

TORCHTOP = [sys.executable, "-m", "torchtop"]
SLEEPER = "import time; print('ready', flush=True); time.sleep(60)"


def read(run_dir: Path, name: str) -> dict[str, Any]:
    found: dict[str, Any] = json.loads((run_dir / name).read_text())
    return found


def run_json_of_run(tmp_path: Path) -> dict[str, Any]:
    run_dir = tmp_path / "run"
    command = ["run", "--headless", "--run-dir", str(run_dir), "--", sys.executable, "-c", "pass"]
    result = subprocess.run([*TORCHTOP, *command], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return read(run_dir, "run.json")


def run_and_exit_json_of_attach(tmp_path: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    run_dir = tmp_path / "attach"
    sleeper = subprocess.Popen([sys.executable, "-c", SLEEPER], stdout=subprocess.PIPE, text=True)
    try:
        assert sleeper.stdout is not None and sleeper.stdout.readline() == "ready\n"
        pid = str(sleeper.pid)
        command = ["attach", pid, "--headless", "--for", "1", "--run-dir", str(run_dir)]
        result = subprocess.run([*TORCHTOP, *command], capture_output=True, text=True, timeout=120)
    finally:
        sleeper.kill()
        sleeper.wait()
    assert result.returncode == 0, result.stderr
    return read(run_dir, "run.json"), read(run_dir, "exit.json")


def test_run_attach_and_tune_write_one_run_json_schema(tmp_path: Path) -> None:
    ran = run_json_of_run(tmp_path)
    attached, detached = run_and_exit_json_of_attach(tmp_path)
    fix = AppliedFix("dataloader.num_workers", 2, "override", "Load batches in 2 workers.")
    plan = initial_plan([sys.executable, "-c", "pass"], {}, str(tmp_path))
    plan = replace(plan, overrides={"dataloader.num_workers": 2}, fixes=(fix,))
    measured = start_plan(plan, tmp_path / "tune")
    measured.finish()
    tuned = read(tmp_path / "tune", "run.json")

    assert list(ran) == list(attached) == list(tuned)
    assert [r["kind"] for r in (ran, attached, tuned)] == ["run", "attach", "tune"]
    assert {r["schema"] for r in (ran, attached, tuned)} == {RUN_SCHEMA}
    assert {r["host"] for r in (ran, attached, tuned)} == {socket.gethostname()}
    assert (ran["overrides"], ran["fixes"]) == ({}, [])
    assert tuned["overrides"] == {"dataloader.num_workers": 2}
    assert tuned["fixes"] == [fix.as_json()]
    assert tuned["cwd"] == str(tmp_path) and tuned["pid"] == measured.pid
    assert detached["how"] == "detached" and detached["duration_s"] is None
    assert list(detached) == list(read(tmp_path / "run", "exit.json"))
