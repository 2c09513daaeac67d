"""Launch plans as text: what a relaunch changes, shown before it happens.

The old and the new command line in full (shell-quoted, so either can be pasted), the
environment variables that differ, and the overrides the agent will apply inside the job.
Variables that are the same in both are not listed: a job's environment has dozens.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping

from torchtop.model.findings import format_value
from torchtop.model.plan import LaunchPlan


def format_plan(before: LaunchPlan, after: LaunchPlan) -> str:
    lines = [f"change: {after.description}"]
    lines += [f"  {change}" for change in after.changes]
    lines.append(f"old command: {shlex.join(before.command)}")
    lines.append(f"new command: {shlex.join(after.command)}")
    diff = env_changes(before.env, after.env)
    lines.append("environment: " + ("unchanged" if not diff else "changed"))
    lines += [f"  {line}" for line in diff]
    if before.cwd != after.cwd:
        lines.append(f"working directory: {before.cwd} -> {after.cwd}")
    if after.overrides:
        lines.append("overrides (the agent applies them inside the job, and says so there):")
        lines += [f"  {line}" for line in format_overrides(after.overrides)]
    return "\n".join(lines) + "\n"


def env_changes(old: Mapping[str, str], new: Mapping[str, str]) -> list[str]:
    lines = []
    for name in sorted(set(old) | set(new)):
        before, after = old.get(name), new.get(name)
        if before != after:
            lines.append(f"{name}: {_shown(before)} -> {_shown(after)}")
    return lines


def format_overrides(overrides: Mapping[str, object]) -> list[str]:
    return [f"{knob} = {format_value(value)}" for knob, value in overrides.items()]


def _shown(value: str | None) -> str:
    return "unset" if value is None else shlex.quote(value)
