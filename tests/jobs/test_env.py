"""The job's environment: the agent's bootstrap once and first, the run folder, the overrides
and the window settings, read back as the agent inside the job reads them."""

from __future__ import annotations

import json
import os
from pathlib import Path

from torchtop.agent.config import DEFAULT_WINDOW_FIRST_STEP, DEFAULT_WINDOW_STEPS, read_config
from torchtop.agent.overrides import requested
from torchtop.jobs.env import BOOTSTRAP_DIR, ON_REQUEST, PERIODIC, Windows, job_environment


def test_the_bootstrap_comes_first_and_the_rest_of_the_environment_is_kept(tmp_path: Path) -> None:
    env = job_environment(tmp_path, {"PYTHONPATH": "/a:/b", "HOME": "/h"})
    assert env["PYTHONPATH"] == f"{BOOTSTRAP_DIR}:/a:/b"
    assert env["TORCHTOP_RUN_DIR"] == str(tmp_path.resolve())
    assert env["HOME"] == "/h"
    assert (BOOTSTRAP_DIR / "sitecustomize.py").is_file()


def test_a_relaunch_from_an_environment_that_had_the_bootstrap_has_it_once(
    tmp_path: Path,
) -> None:
    first = job_environment(tmp_path / "a", {"PYTHONPATH": "/a"})
    twice = f"/z{os.pathsep}{first['PYTHONPATH']}{os.pathsep}{BOOTSTRAP_DIR}"
    again = job_environment(tmp_path / "b", {**first, "PYTHONPATH": twice})
    assert again["PYTHONPATH"].split(os.pathsep) == [str(BOOTSTRAP_DIR), "/z", "/a"]
    assert again["TORCHTOP_RUN_DIR"] == str((tmp_path / "b").resolve())


def test_without_a_pythonpath_the_bootstrap_is_all_of_it(tmp_path: Path) -> None:
    assert job_environment(tmp_path, {})["PYTHONPATH"] == str(BOOTSTRAP_DIR)


def test_overrides_reach_the_agent_as_json_it_reads_back(tmp_path: Path) -> None:
    overrides = {"torch.num_threads": 1, "dataloader.num_workers": 8}
    env = job_environment(tmp_path, {}, overrides)
    assert env["TORCHTOP_OVERRIDES"] == '{"dataloader.num_workers": 8, "torch.num_threads": 1}'
    assert requested(env) == (overrides, [])
    assert "TORCHTOP_OVERRIDES" not in job_environment(tmp_path, {}, {})


def test_periodic_windows_leave_the_agents_schedule_and_the_users_own_settings(
    tmp_path: Path,
) -> None:
    env = job_environment(tmp_path, {"TORCHTOP_WINDOW_EVERY_S": "5"}, windows=PERIODIC)
    config, problems = read_config(env)
    assert config is not None and problems == []
    assert (config.window_every_s, config.window_steps, config.window_first_step) == (
        5.0,
        DEFAULT_WINDOW_STEPS,
        DEFAULT_WINDOW_FIRST_STEP,
    )


def test_windows_on_request_turn_the_periodic_ones_off_and_keep_the_one_window_length(
    tmp_path: Path,
) -> None:
    config, problems = read_config(job_environment(tmp_path, {}, windows=ON_REQUEST))
    assert config is not None and problems == []
    assert (config.window_every_s, config.window_steps) == (0.0, DEFAULT_WINDOW_STEPS)


def test_each_window_setting_given_is_the_one_the_agent_reads(tmp_path: Path) -> None:
    env = job_environment(tmp_path, {}, windows=Windows(every_s=2.5, steps=3, first_step=7))
    assert json.dumps({k: v for k, v in env.items() if "WINDOW" in k}, sort_keys=True) == (
        '{"TORCHTOP_WINDOW_EVERY_S": "2.5", "TORCHTOP_WINDOW_FIRST_STEP": "7", '
        '"TORCHTOP_WINDOW_STEPS": "3"}'
    )
    config, _ = read_config(env)
    assert config is not None
    assert (config.window_every_s, config.window_steps, config.window_first_step) == (2.5, 3, 7)
