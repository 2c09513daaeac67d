"""The agent's settings come from TORCHTOP_* variables; bad values fall back, with a complaint."""

from __future__ import annotations

from pathlib import Path

from torchtop.agent.config import AgentConfig, read_config
from torchtop.agent.launch_env import BOOTSTRAP_DIR, agent_env


def test_without_a_run_folder_there_is_no_agent() -> None:
    assert read_config({}) == (None, [])


def test_the_defaults_open_four_step_windows_every_thirty_seconds_from_step_five() -> None:
    config, problems = read_config({"TORCHTOP_RUN_DIR": "/runs/a"})
    assert config == AgentConfig(Path("/runs/a"), 30.0, 4, 5)
    assert problems == []


def test_a_bad_value_falls_back_to_its_default_and_is_reported() -> None:
    env = {"TORCHTOP_RUN_DIR": "/r", "TORCHTOP_WINDOW_EVERY_S": "-1", "TORCHTOP_WINDOW_STEPS": "0"}
    config, problems = read_config(env)
    assert config is not None
    assert (config.window_every_s, config.window_steps) == (30.0, 4)
    assert len(problems) == 2


def test_the_launch_environment_puts_the_bootstrap_first_and_keeps_the_rest(tmp_path: Path) -> None:
    env = agent_env(tmp_path, {"PYTHONPATH": "/a:/b", "HOME": "/h"}, window_every_s=0)
    assert env["PYTHONPATH"] == f"{BOOTSTRAP_DIR}:/a:/b"
    assert env["TORCHTOP_RUN_DIR"] == str(tmp_path.resolve())
    assert env["TORCHTOP_WINDOW_EVERY_S"] == "0"
    assert env["HOME"] == "/h"
    assert (BOOTSTRAP_DIR / "sitecustomize.py").is_file()
