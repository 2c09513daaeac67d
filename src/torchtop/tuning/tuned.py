"""`torchtop.toml`: the tuned command, environment and overrides, written for reuse.

```toml
command = ["python", "train.py", "--num-workers", "8"]
original_command = ["python", "train.py"]   # as tune was given it

[env]                      # only the variables tune set; the rest of the environment is yours
OMP_NUM_THREADS = "1"

[overrides]                # applied by the agent inside the job (under `torchtop run`)
"dataloader.num_workers" = 8

[bind]                     # yours: knob -> the script's flag, for options torchtop cannot see
"train.batch_size" = "--bs"
```

`torchtop run` applies the file (`sessions/run_config.py`): given `original_command` (or no command)
it runs `command`, and it sets `[env]` and passes `[overrides]` to the agent; so the line tune
prints, `torchtop run --config FILE -- COMMAND`, reproduces the tuned job. The file is written
by hand-rolled TOML (the standard library reads TOML but cannot write it):
only strings, numbers, booleans and lists of strings occur. A `[bind]` table already in the
file is kept when tune rewrites it.
"""

from __future__ import annotations

import json
import math
import re
import shlex
import time
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from torchtop.advice.show import env_changes
from torchtop.errors import InputError
from torchtop.model.trial_entry import TrialEntry
from torchtop.trials.trial import trial_entry
from torchtop.tuning.tune import TuneResult

TUNED_FILE = "torchtop.toml"
_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


@dataclass(frozen=True)
class Tuned:
    command: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    overrides: dict[str, object] = field(default_factory=dict)
    bind: dict[str, str] = field(default_factory=dict)
    original_command: tuple[str, ...] = ()
    """The command tune was given (absent from files written before it was recorded)."""


def load_tuned(path: Path) -> Tuned:
    """Read `torchtop.toml`; an absent file is an empty one."""
    if not path.is_file():
        return Tuned()
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise InputError(str(path), f"not a readable torchtop.toml: {exc}") from None
    return Tuned(
        command=_words(path, data, "command"),
        env={str(k): str(v) for k, v in _table(path, data, "env").items()},
        overrides=_table(path, data, "overrides"),
        bind={str(k): str(v) for k, v in _table(path, data, "bind").items()},
        original_command=_words(path, data, "original_command"),
    )


def _words(path: Path, data: Mapping[str, object], key: str) -> tuple[str, ...]:
    words = data.get(key, [])
    if not isinstance(words, list) or not all(isinstance(w, str) for w in words):
        raise InputError(str(path), f'`{key}` must be a list of strings, like ["python", ...]')
    return tuple(words)


def _table(path: Path, data: Mapping[str, object], key: str) -> dict[str, object]:
    table = data.get(key, {})
    if not isinstance(table, dict):
        raise InputError(str(path), f"`{key}` must be a table ([{key}])")
    return dict(table)


def tuned_from(result: TuneResult, bind: Mapping[str, str]) -> Tuned:
    changed = {k: v for k, v in result.final.env.items() if result.original.env.get(k) != v}
    return Tuned(
        tuple(result.final.command),
        changed,
        dict(result.final.overrides),
        dict(bind),
        tuple(result.original.command),
    )


def write_tuned(path: Path, result: TuneResult) -> Tuned:
    """Write (or rewrite) `path` for `result`, keeping its `[bind]` table."""
    tuned = tuned_from(result, load_tuned(path).bind)
    path.write_text(render_tuned(tuned, result, path), encoding="utf-8")
    return tuned


def render_tuned(tuned: Tuned, result: TuneResult, path: Path | None = None) -> str:
    lines = [
        f"# Written by `torchtop tune` on {time.strftime('%Y-%m-%d %H:%M:%S')}; "
        f"the trials are in {result.run_dir.resolve()}.",
        f"# Tuned: {result.baseline.steps_per_s:.2f} -> {result.final_steps_per_s:.2f} steps/s "
        "(each change measured in an A/B trial):",
        *(f"#   {_trial_line(trial_entry(t))}" for t in result.trials),
        "# Run it again with:",
        f"#   {shell_line(tuned, path)}",
        "",
        "# The command line, with the options tune changed; `torchtop run -- <original_command>`",
        "# (or `torchtop run` with no command) runs it.",
        f"command = {_value(list(tuned.command))}",
        f"original_command = {_value(list(tuned.original_command))}",
        "",
        "# Environment variables tune set; the rest of the environment is left as it is.",
        "[env]",
        *(f"{_key(k)} = {_value(v)}" for k, v in tuned.env.items()),
        "",
        "# Library defaults the agent overrides inside the job (applied under `torchtop run`).",
        "[overrides]",
        *(f"{_key(k)} = {_value(v)}" for k, v in tuned.overrides.items()),
        "",
        "# Yours to edit: knob -> the script's flag, for options torchtop cannot see.",
        '# e.g. "dataloader.num_workers" = "--workers"',
        "[bind]",
        *(f"{_key(k)} = {_value(v)}" for k, v in tuned.bind.items()),
    ]
    return "\n".join(lines) + "\n"


def shell_line(tuned: Tuned, config: Path | None = None) -> str:
    """The tuned job as one shell line. Overrides need the agent: then `torchtop run` with the
    file (`config`; None: `./torchtop.toml`, which `run` reads by default), which also sets
    its environment; else the plain command with its variables."""
    if tuned.overrides:
        where = [] if config is None else ["--config", _shown_path(config)]
        return shlex.join(["torchtop", "run", *where, "--", *tuned.command])
    variables = [f"{k}={shlex.quote(v)}" for k, v in tuned.env.items()]
    return " ".join([*variables, shlex.join(tuned.command)])


def describe_final(result: TuneResult, config: Path | None = None) -> list[str]:
    """The final command line and environment, as printed at the end of `tune`."""
    tuned = tuned_from(result, {})
    lines = [f"command: {shlex.join(result.final.command)}"]
    changes = env_changes(result.original.env, result.final.env)
    lines.append("environment: " + ("; ".join(changes) if changes else "unchanged"))
    if tuned.overrides:
        shown = ", ".join(f"{k} = {v}" for k, v in tuned.overrides.items())
        lines.append(f"overrides (under torchtop run): {shown}")
    lines.append(f"to run it: {shell_line(tuned, config)}")
    return lines


def _shown_path(path: Path) -> str:
    """`path` relative to the working folder when it lies under it, else absolute."""
    absolute = path.resolve()
    try:
        return str(absolute.relative_to(Path.cwd()))
    except ValueError:
        return str(absolute)


def _trial_line(trial: TrialEntry) -> str:
    named = ", ".join(f"{f.knob} = {f.value} ({f.apply})" for f in trial.fixes)
    verdict = "kept" if trial.kept else "reverted"
    before, after = trial.baseline_steps_per_s, trial.trial_steps_per_s
    return f"trial {trial.number}: {named}: {_rate(before)} -> {_rate(after)}, {verdict}"


def _rate(steps_per_s: float | None) -> str:
    return f"{steps_per_s:.2f} steps/s" if steps_per_s is not None else "not measured"


def _key(key: str) -> str:
    return key if _BARE_KEY.match(key) else json.dumps(key)


def _value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else json.dumps(str(value))
    if isinstance(value, Sequence) and not isinstance(value, str):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    return json.dumps(str(value))
