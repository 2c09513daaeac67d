"""What a job is launched with, as data: the command, environment, working directory and agent
overrides (`LaunchPlan`), the fixes applied on the way to it, or why a fix cannot be applied.

`advice.plan` makes plans; `jobs` starts them; trials, `tune` and the dashboard carry them. The
types live down here so that all of those, and the report, can hold a plan without importing
the planner.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from torchtop.model.findings import Fix
from torchtop.model.trial_entry import FixEntry


@dataclass(frozen=True)
class AppliedFix:
    """A fix as applied: the knob, its concrete value and the route taken."""

    knob: str
    value: object
    route: str
    description: str

    def entry(self) -> FixEntry:
        """The contract's fix shape: `{knob, value, apply, description}` (in the report, in
        `run.json` and in `reverts.jsonl` alike)."""
        return FixEntry(self.knob, self.value, self.route, self.description)


@dataclass(frozen=True)
class LaunchPlan:
    command: tuple[str, ...]
    env: Mapping[str, str]
    """The job's whole environment (without torchtop's own `TORCHTOP_*` variables)."""
    cwd: str
    overrides: Mapping[str, object] = field(default_factory=dict)
    """knob -> value, applied by the agent inside the job (`TORCHTOP_OVERRIDES`)."""
    fixes: tuple[AppliedFix, ...] = ()
    """Every fix applied on the way from the user's command to this plan."""
    route: str | None = None
    """How the newest fix is applied; None for the user's own command."""
    description: str = "the command as given"
    changes: tuple[str, ...] = ()
    """The newest fix as `old -> new` lines, for the user to read before a relaunch."""


@dataclass(frozen=True)
class NotApplicable:
    fix: Fix
    reason: str
    patch: str | None = None
    """For a code fix: the change to make by hand."""
    in_effect: bool = False
    """The job already runs with the fix's value: there is nothing to change."""
