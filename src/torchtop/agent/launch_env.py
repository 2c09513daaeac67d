"""The environment that puts the agent into every Python process a command starts.

`bootstrap/` holds only a `sitecustomize.py`; prepending it to `PYTHONPATH` makes every Python
interpreter the command starts (torchrun's workers, spawned DataLoader workers, subprocesses)
run it at start-up. It does nothing unless `TORCHTOP_RUN_DIR` is set, so a process that leaves
the variable out is untouched.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from torchtop.agent.config import RUN_DIR_ENV, WINDOW_EVERY_ENV, WINDOW_STEPS_ENV

BOOTSTRAP_DIR = Path(__file__).resolve().parent / "bootstrap"


def agent_env(
    run_dir: Path,
    base: Mapping[str, str] | None = None,
    window_every_s: float | None = None,
    window_steps: int | None = None,
) -> dict[str, str]:
    """`base` (default: this process's environment) with the agent switched on for `run_dir`."""
    env = dict(os.environ if base is None else base)
    existing = env.get("PYTHONPATH", "")
    parts = [str(BOOTSTRAP_DIR)] + [p for p in existing.split(os.pathsep) if p]
    env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(parts))
    env[RUN_DIR_ENV] = str(run_dir.resolve())
    if window_every_s is not None:
        env[WINDOW_EVERY_ENV] = f"{window_every_s:g}"
    if window_steps is not None:
        env[WINDOW_STEPS_ENV] = str(window_steps)
    return env
