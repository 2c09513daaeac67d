"""The agent's settings come from TORCHTOP_* variables; bad values fall back, with a complaint."""

from __future__ import annotations

from pathlib import Path

from torchtop.agent.config import AgentConfig, read_config


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


def test_a_modules_request_times_twenty_steps_unless_told_otherwise() -> None:
    config, _ = read_config({"TORCHTOP_RUN_DIR": "/r"})
    assert config is not None and config.module_steps == 20
    config, problems = read_config({"TORCHTOP_RUN_DIR": "/r", "TORCHTOP_MODULE_STEPS": "50"})
    assert config is not None and config.module_steps == 50 and problems == []
    config, problems = read_config({"TORCHTOP_RUN_DIR": "/r", "TORCHTOP_MODULE_STEPS": "0"})
    assert config is not None and config.module_steps == 20
    assert problems == ["TORCHTOP_MODULE_STEPS='0' is not a number >= 1; using 20"]


def test_windows_record_shapes_unless_told_not_to() -> None:
    config, _ = read_config({"TORCHTOP_RUN_DIR": "/r"})
    assert config is not None and config.window_shapes
    config, problems = read_config({"TORCHTOP_RUN_DIR": "/r", "TORCHTOP_WINDOW_SHAPES": "0"})
    assert config is not None and not config.window_shapes and problems == []
    config, problems = read_config({"TORCHTOP_RUN_DIR": "/r", "TORCHTOP_WINDOW_SHAPES": "yes"})
    assert config is not None and config.window_shapes
    assert problems == ["TORCHTOP_WINDOW_SHAPES='yes' is not 0 or 1; using 1"]
