"""`torchtop run` with a `torchtop.toml`: which file applies, the command it runs, what it says.

`tune` writes the file (`tuning/tuned.py`); `run` applies it, so that the line tune prints
reproduces the tuned job: `--config FILE`, else `./torchtop.toml` when present, unless
`--no-config`. The file's `[env]` is set and its `[overrides]` are passed to the agent. Its
`command` replaces the user's when the user gave none, or gave the command tune was given
(`original_command`).

The file in the working folder is keyed to its command: it was tuned for one script, and the
folder may hold others (`slow.py` tuned, `train.py` beside it), whose speed its settings say
nothing of. So another command runs as given with nothing of the file applied, and one line
says so and how to apply it anyway: `--config FILE`, which applies the file's environment and
overrides to whatever command it is given (the command itself is never rewritten to another).
What was applied is announced on stderr, in two lines, so that a run never silently differs
from the command typed.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from torchtop.errors import InputError
from torchtop.model.plan import LaunchPlan
from torchtop.tuning.tuned import TUNED_FILE, Tuned, load_tuned


@dataclass(frozen=True)
class RunConfig:
    """The file applied (None: none) and the command the run starts."""

    path: Path | None
    command: tuple[str, ...]
    tuned: Tuned = field(default_factory=Tuned)
    """The file as read (empty when none applies): `run` starts the job with its `env` and
    `overrides`."""
    command_note: str = ""
    passed_over: Tuned | None = None
    """The working folder's file, not applied: it was tuned for another command."""

    def plan(self, base: LaunchPlan) -> LaunchPlan:
        """The plan the job was launched with, for trials and relaunches from the dashboard."""
        if self.path is None:
            return base
        env: Mapping[str, str] = {**base.env, **self.tuned.env}
        return replace(base, env=env, overrides={**base.overrides, **self.tuned.overrides})

    def announcement(self) -> list[str]:
        if self.passed_over is not None:
            tuned_for = shlex.join(self.passed_over.original_command or self.passed_over.command)
            return [
                f"torchtop: not applying ./{TUNED_FILE}: it was tuned for `{tuned_for}`, not "
                f"this command (`--config {TUNED_FILE}` applies it anyway)"
            ]
        if self.path is None:
            return []
        tuned = self.tuned
        env = "; ".join(f"{k}={shlex.quote(v)}" for k, v in tuned.env.items()) or "none"
        overrides = ", ".join(f"{k} = {v}" for k, v in tuned.overrides.items()) or "none"
        return [
            f"torchtop: applying {self.path} (--no-config runs without it): {self.command_note}",
            f"torchtop: environment: {env}; overrides: {overrides}",
        ]


def resolve_config(
    option: str | None, disabled: bool, command: Sequence[str], cwd: Path
) -> RunConfig:
    """The config that applies to `torchtop run [--config FILE] -- COMMAND` in `cwd`.

    Raises `InputError` naming the file when it is missing (given by `--config`) or broken."""
    given = tuple(command)
    if disabled:
        return RunConfig(None, given)
    if option is not None:
        path = Path(option)
        if not path.is_file():
            raise InputError(option, "no such file (--config: a torchtop.toml to apply)")
    else:
        path = cwd / TUNED_FILE
        if not path.is_file():
            return RunConfig(None, given)
    tuned = load_tuned(path)
    if option is None and not _keyed_to(tuned, given):
        return RunConfig(None, given, passed_over=tuned)
    runs, note = _command(tuned, given)
    return RunConfig(path, runs, tuned, note)


def _keyed_to(tuned: Tuned, given: tuple[str, ...]) -> bool:
    """Whether the folder's file speaks for `given`: its own command, the one tune was given,
    or none (`run` alone runs the file's); a file that names no command speaks for any."""
    return not given or not tuned.command or given in (tuned.command, tuned.original_command)


def _command(tuned: Tuned, given: tuple[str, ...]) -> tuple[tuple[str, ...], str]:
    """The command to run and how it came to be, in words."""
    if not tuned.command:
        return given, "the command as given"
    if not given:
        return tuned.command, f"command from the file: {shlex.join(tuned.command)}"
    if given == tuned.command:
        return given, "the command as given (the file's own)"
    if given == tuned.original_command:
        return tuned.command, f"command {shlex.join(given)} -> {shlex.join(tuned.command)}"
    return given, "the command as given (the file's command is for another one)"
