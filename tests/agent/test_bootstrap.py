"""The start-up hook: silent without a run folder or without torch, and never hides another one."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

from tests.agent.running import bootstrap_only_env, run_job
from torchtop.jobs.env import job_environment
from torchtop.runs.layout import RunLayout

NO_TORCH = """
import argparse, sys
parser = argparse.ArgumentParser()
parser.add_argument("--x", type=int)
loaded = "torch" in sys.modules, "torchtop.agent.hooks" in sys.modules
print(parser.parse_args(["--x", "1"]).x, *loaded)
"""

LOADED = """
import sys
import torch
print(sorted(m for m in sys.modules if m.startswith("torchtop")))
print([type(f).__name__ for f in sys.meta_path if "Watcher" in type(f).__name__])
"""


def user_sitecustomize(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "sitecustomize.py").write_text("print('user sitecustomize ran')\nMARK = 42\n")
    return folder


def test_a_process_that_never_imports_torch_writes_nothing(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    job = run_job(run_dir, ["-c", NO_TORCH])
    assert (job.returncode, job.stdout, job.stderr) == (0, "1 False False\n", "")
    assert not run_dir.exists()


def test_without_a_run_folder_the_agent_stays_out_even_when_torch_is_imported(
    tmp_path: Path,
) -> None:
    result = subprocess.run(
        [sys.executable, "-c", LOADED],
        env=bootstrap_only_env([]),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == "[]\n[]\n"
    assert list(tmp_path.iterdir()) == []


def test_the_sitecustomize_it_hides_still_runs(tmp_path: Path) -> None:
    user = user_sitecustomize(tmp_path / "user")
    probe = "import sitecustomize; print(sitecustomize.MARK, sitecustomize.__file__)"
    for env_run_dir in (None, tmp_path / "run"):
        env = bootstrap_only_env([user])
        if env_run_dir is not None:
            env = job_environment(env_run_dir, env)
        result = subprocess.run(
            [sys.executable, "-c", probe],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert result.returncode == 0, result.stderr
        assert result.stdout == f"user sitecustomize ran\n42 {user / 'sitecustomize.py'}\n"


def test_an_agent_that_cannot_start_leaves_the_job_alone(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    job = run_job(blocker / "run", "slow_data", "--steps", "2", "--exit-status", "5", cwd=tmp_path)
    assert job.returncode == 5, job.stderr
    assert job.stdout == "trained 2 steps\nlast line from the job\n"
    assert job.stderr == ""


INTERRUPTED = "try:\n    raise KeyboardInterrupt\nfinally:\n    print('cleaned up')\n"


def test_a_keyboard_interrupt_after_torchtops_stop_is_one_line_and_still_a_sigint(
    tmp_path: Path,
) -> None:
    run_dir = tmp_path / "run"
    RunLayout(run_dir).stop_request.parent.mkdir(parents=True)
    RunLayout(run_dir).stop_request.touch()
    job = run_job(run_dir, ["-c", INTERRUPTED])
    assert (job.returncode, job.stdout) == (-signal.SIGINT, "cleaned up\n")
    assert job.stderr == "stopped by torchtop (SIGINT)\n"


def test_a_keyboard_interrupt_of_the_jobs_own_keeps_its_traceback(tmp_path: Path) -> None:
    job = run_job(tmp_path / "run", ["-c", INTERRUPTED])  # no stop was asked
    assert job.returncode == -signal.SIGINT
    assert job.stderr.startswith("Traceback (most recent call last):")
    assert job.stderr.endswith("KeyboardInterrupt\n")
