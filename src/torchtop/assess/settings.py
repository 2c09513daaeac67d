"""A recorded run's settings (`model.settings.JobSettings`): the launch's `run.json` and the
newest `settings` record of the job's first rank (rank 0, or the first training process).

The ranks of one job run one script with one environment, so one rank stands for them; the
agent writes `settings` again as the job builds its DataLoader or compiles, and the newest
record is what the job ran with. An option whose name looks like a secret is left out, as
`runs.environment` leaves out such variables.
"""

from __future__ import annotations

import msgspec

from torchtop.model.settings import JobSettings, Scalar, ScriptOption
from torchtop.runs.environment import MAX_VALUE_CHARS, SECRET
from torchtop.runs.records import CliOption, Settings
from torchtop.runs.state import RunState


def recorded_settings(state: RunState) -> JobSettings:
    launch = state.launch
    env = launch.env if isinstance(launch.env, dict) else None
    overrides: dict[str, Scalar] = (
        dict(launch.overrides) if isinstance(launch.overrides, dict) else {}
    )
    settings = _first_settings(state)
    if settings is None:
        return JobSettings(env=env, overrides=overrides)
    return JobSettings(
        env=env,
        overrides={**overrides, **settings.overrides},
        dataloader=_table(settings.dataloader),
        threads=_table(settings.threads),
        device=settings.device,
        amp=settings.amp,
        compiled=settings.compiled,
        options=tuple(_option(o) for o in settings.cli_options if not SECRET.search(o.dest)),
        agent=True,
    )


def _first_settings(state: RunState) -> Settings | None:
    processes = sorted(
        (p for p in state.training_processes if p.settings is not None),
        key=lambda p: (p.rank is None, p.rank or 0, p.pid),
    )
    return processes[0].settings if processes else None


def _table(part: msgspec.Struct | None) -> dict[str, Scalar] | None:
    if part is None:
        return None
    table = msgspec.to_builtins(part)
    assert isinstance(table, dict)
    return {key: _scalar(value) for key, value in table.items()}


def _option(option: CliOption) -> ScriptOption:
    return ScriptOption(option.dest, tuple(option.flags), _scalar(option.value))


def _scalar(value: object) -> Scalar:
    if value is None or isinstance(value, str | int | float | bool):
        return value[:MAX_VALUE_CHARS] if isinstance(value, str) else value
    return str(value)[:MAX_VALUE_CHARS]
