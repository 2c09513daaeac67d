"""`torchtop tune` stopped by Ctrl-C or a SIGTERM: the job then running is stopped, what was
decided stands and is written, the trial cut short is named and not kept, and it exits 130, with
no traceback. Before the baseline is measured there is nothing to keep, and nothing is written."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

from tests.conftest import signal_once_there
from torchtop.tuning.tune import INTERRUPTED

pytestmark = pytest.mark.slow
DEMO = [sys.executable, "-m", "torchtop.demo.train"]


def start_tune(tmp_path: Path) -> subprocess.Popen[str]:
    run_dir = tmp_path / "run"
    return subprocess.Popen(
        [sys.executable, "-m", "torchtop", "tune", "--run-dir", str(run_dir), "--", *DEMO],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
        env={k: v for k, v in os.environ.items() if not k.startswith("TORCHTOP_")},
    )


def jobs_started(run_dir: Path) -> list[int]:
    return [json.loads(p.read_text())["pid"] for p in run_dir.rglob("run.json")]


def alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def test_a_sigterm_during_a_trial_stops_it_keeps_what_was_decided_and_exits_130(
    tmp_path: Path,
) -> None:
    tune = start_tune(tmp_path)
    run_dir = tmp_path / "run"
    started = run_dir / "trials" / "01" / "after-1" / "run.json"
    stdout, stderr = signal_once_there(tune, started, signal.SIGTERM)  # its job is stepping
    assert tune.returncode == 130, stderr[-3000:]
    assert "Traceback" not in stderr
    assert f"stopped: {INTERRUPTED}" in stdout
    assert "trial 1: " in stdout and ": interrupted before it decided: not kept" in stdout
    assert "num-workers" in stdout.split("trial 1: ")[1].splitlines()[0]
    report = json.loads((run_dir / "report.json").read_text())
    assert report["tune"]["stopped_because"] == INTERRUPTED and report["trials"] == []
    assert (tmp_path / "torchtop.toml").exists()
    pids = jobs_started(run_dir)
    assert len(pids) >= 2 and not any(alive(pid) for pid in pids)  # the trial's job too


def test_ctrl_c_before_the_baseline_is_measured_writes_nothing_and_exits_130(
    tmp_path: Path,
) -> None:
    tune = start_tune(tmp_path)
    run_dir = tmp_path / "run"
    _, stderr = signal_once_there(tune, run_dir / "baseline" / "run.json", signal.SIGINT, 0.0)
    assert tune.returncode == 130, stderr[-3000:]
    assert "Traceback" not in stderr
    assert "interrupted before the job's baseline was measured; nothing was tried" in stderr
    assert not (tmp_path / "torchtop.toml").exists()
    assert not any(alive(pid) for pid in jobs_started(run_dir))
