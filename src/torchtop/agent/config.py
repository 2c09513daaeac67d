"""The agent's settings, read from the environment the launcher gives the job.

The agent has no command line of its own (it lives in someone else's process), so everything
it needs travels in `TORCHTOP_*` variables, which every process the command starts inherits.
A bad value falls back to its default and is reported, never fatal.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

RUN_DIR_ENV = "TORCHTOP_RUN_DIR"
WINDOW_EVERY_ENV = "TORCHTOP_WINDOW_EVERY_S"
WINDOW_STEPS_ENV = "TORCHTOP_WINDOW_STEPS"
WINDOW_FIRST_STEP_ENV = "TORCHTOP_WINDOW_FIRST_STEP"
MODULE_STEPS_ENV = "TORCHTOP_MODULE_STEPS"
WINDOW_SHAPES_ENV = "TORCHTOP_WINDOW_SHAPES"

DEFAULT_WINDOW_EVERY_S = 30.0
DEFAULT_WINDOW_STEPS = 4
DEFAULT_WINDOW_FIRST_STEP = 5
DEFAULT_MODULE_STEPS = 20


@dataclass(frozen=True)
class AgentConfig:
    """`window_every_s == 0` turns periodic windows off; a dashboard request still takes one."""

    run_dir: Path
    window_every_s: float = DEFAULT_WINDOW_EVERY_S
    window_steps: int = DEFAULT_WINDOW_STEPS
    window_first_step: int = DEFAULT_WINDOW_FIRST_STEP
    module_steps: int = DEFAULT_MODULE_STEPS
    """How many steps a module timing request (`RUN/requests/modules`) times."""
    window_shapes: bool = True
    """Windows record operators' shapes (`record_shapes`): the FLOPs, roofline and MFU of the
    report's `efficiency` come from them. `TORCHTOP_WINDOW_SHAPES=0` turns it off (the
    overhead benchmark compares the two)."""


def read_config(env: Mapping[str, str]) -> tuple[AgentConfig | None, list[str]]:
    """The config (None when no run folder is set: the agent stays off) and any complaints."""
    run_dir = env.get(RUN_DIR_ENV, "")
    if not run_dir:
        return None, []
    problems: list[str] = []
    every_s = _number(env, WINDOW_EVERY_ENV, DEFAULT_WINDOW_EVERY_S, problems)
    steps = _number(env, WINDOW_STEPS_ENV, DEFAULT_WINDOW_STEPS, problems, minimum=1)
    first = _number(env, WINDOW_FIRST_STEP_ENV, DEFAULT_WINDOW_FIRST_STEP, problems)
    module_steps = _number(env, MODULE_STEPS_ENV, DEFAULT_MODULE_STEPS, problems, minimum=1)
    shapes = _switch(env, WINDOW_SHAPES_ENV, True, problems)
    config = AgentConfig(
        Path(run_dir), every_s, int(steps), int(first), int(module_steps), window_shapes=shapes
    )
    return config, problems


def _switch(env: Mapping[str, str], name: str, default: bool, problems: list[str]) -> bool:
    text = env.get(name, "").strip().lower()
    if not text:
        return default
    if text in ("0", "1"):
        return text == "1"
    problems.append(f"{name}={text!r} is not 0 or 1; using {int(default)}")
    return default


def _number(
    env: Mapping[str, str],
    name: str,
    default: float,
    problems: list[str],
    minimum: float = 0.0,
) -> float:
    text = env.get(name, "").strip()
    if not text:
        return default
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < minimum:
        problems.append(f"{name}={text!r} is not a number >= {minimum:g}; using {default:g}")
        return default
    return value
