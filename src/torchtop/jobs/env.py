"""The environment a job runs in: the caller's variables with the agent switched on.

`agent/bootstrap/` holds only a `sitecustomize.py`; putting it first on `PYTHONPATH` makes
every Python interpreter the command starts (torchrun's workers, spawned DataLoader workers,
subprocesses) run it at start-up, and it does nothing unless `TORCHTOP_RUN_DIR` is set. The
bootstrap appears once however often a job is relaunched from an environment that already had
it; the user's own entries stay as they were, in their order.

`Windows` says when the agent captures profiler windows. A field left None leaves the agent's
default (`agent.config`), or what the caller's environment already says: under `torchtop run`
the user may set `TORCHTOP_WINDOW_*` themselves.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from torchtop.agent.config import (
    RUN_DIR_ENV,
    WINDOW_EVERY_ENV,
    WINDOW_FIRST_STEP_ENV,
    WINDOW_SHAPES_ENV,
    WINDOW_STEPS_ENV,
)
from torchtop.agent.overrides import OVERRIDES_ENV

BOOTSTRAP_DIR = Path(__file__).resolve().parents[1] / "agent" / "bootstrap"


@dataclass(frozen=True)
class Windows:
    """When the agent captures profiler windows; None leaves the setting as it is."""

    every_s: float | None = None
    """Seconds between periodic windows; 0 takes them only on request (`RUN/requests/window`)."""
    steps: int | None = None
    first_step: int | None = None
    shapes: bool | None = None
    """Whether windows record operators' shapes (the agent's default: they do)."""

    def variables(self) -> dict[str, str]:
        settings = {
            WINDOW_EVERY_ENV: None if self.every_s is None else f"{self.every_s:g}",
            WINDOW_STEPS_ENV: None if self.steps is None else str(self.steps),
            WINDOW_FIRST_STEP_ENV: None if self.first_step is None else str(self.first_step),
            WINDOW_SHAPES_ENV: None if self.shapes is None else str(int(self.shapes)),
        }
        return {name: value for name, value in settings.items() if value is not None}


PERIODIC = Windows()
"""The agent's own schedule: a window early on, then one every 30 s (`run`, `demo`)."""
ON_REQUEST = Windows(every_s=0.0)
"""Windows only when asked for: a measured run must not pay for the profiler (`tune`, trials)."""


def job_environment(
    run_dir: Path,
    base: Mapping[str, str] | None = None,
    overrides: Mapping[str, object] | None = None,
    windows: Windows = PERIODIC,
) -> dict[str, str]:
    """`base` (default: this process's environment) with the agent on, recording to `run_dir`;
    `overrides` (knob -> value) are passed to the agent as `TORCHTOP_OVERRIDES` JSON."""
    env = dict(os.environ if base is None else base)
    env["PYTHONPATH"] = with_bootstrap(env.get("PYTHONPATH", ""))
    env[RUN_DIR_ENV] = str(run_dir.resolve())
    if overrides:
        env[OVERRIDES_ENV] = json.dumps(dict(overrides), sort_keys=True)
    env.update(windows.variables())
    return env


def with_bootstrap(python_path: str) -> str:
    """`python_path` with the bootstrap first and nowhere else."""
    bootstrap = str(BOOTSTRAP_DIR)
    if not python_path:
        return bootstrap
    rest = [entry for entry in python_path.split(os.pathsep) if entry != bootstrap]
    return os.pathsep.join([bootstrap, *rest])
