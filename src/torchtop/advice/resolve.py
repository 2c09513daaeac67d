"""Every fix of a verdict with the one value it would set on this job and machine.

A rule's value is a floor or a phrase (4 workers, "cores", "2x"); the planner turns it into
the number a relaunch sets (`plan_fix`). The report, the headless line, the dashboard's list,
its details and confirm modal and the trial record all show a fix; each once took its value
from a different place, so one screen said 4 workers and the next 5. `resolve_verdict` plans
every fix once, as applying it would, and the verdict carries the resolved fix: every surface
that shows `fix.value` shows the same number. A fix the job already runs with is dropped: it is
not offered as a change (the job runs with 8 workers; "8 workers" is not advice).

Fixes that cannot be planned (a knob with no route) are kept as the rule wrote them: the
surfaces show why when asked to apply them. A value in words that cannot be made a number for
this job ("physical cores" where the machine is not known) drops the fix: a fix is never shown
with a placeholder for its value. A code change is located in the user's code instead, from the
job's stacks where there are any (`Fix.where`); a DDP option goes on the line that built the
`DistributedDataParallel` where the agent saw it.

A fix with a model of what it takes carries its net predicted gain (`Fix.predicted_gain`: more
DataLoader workers take cores from the math, `advice/loader_model.py`); one predicted under
`OFFER_MIN_GAIN` is not offered, and the finding says why. A finding's severity follows the
best net gain of its fixes where every fix has one (no high for a few percent), and the
findings are ordered again by it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import msgspec

from torchtop.advice.locate import WeightedStack, located
from torchtop.advice.machine import Machine
from torchtop.advice.plan import initial_plan, plan_fix
from torchtop.advice.values import worker_fit
from torchtop.model.findings import (
    OFFER_MIN_GAIN,
    Finding,
    Fix,
    Verdict,
    format_value,
    severity_for_gain,
)
from torchtop.model.fix_values import symbolic_value
from torchtop.model.knobs import ALLOW_GROUPS, find_knob
from torchtop.model.plan import NotApplicable
from torchtop.runs.records import DdpSettings, Settings


def resolve_fix(
    fix: Fix,
    settings: Settings | None,
    machine: Machine,
    metrics: Mapping[str, object],
    argv: Sequence[str] | None = None,
    env: Mapping[str, str] | None = None,
) -> Fix | None:
    """`fix` with the value applying it would set; None when the job already runs with it.

    Planned with every `--allow` group: whether the user allows a knob decides whether it is
    tried, not what value it would take."""
    knob = find_knob(fix.knob)
    if fix.apply == "code" or (knob is not None and knob.routes == ("code",)):
        return fix
    base = initial_plan((), _job_env(settings) if env is None else env, "")
    planned = plan_fix(fix, base, settings, machine, allow=ALLOW_GROUPS, metrics=metrics, argv=argv)
    if isinstance(planned, NotApplicable):
        unresolved = symbolic_value(fix.value) is not None
        return None if planned.in_effect or unresolved else fix
    value = planned.fixes[-1].value
    gain = _net_gain(fix, settings, machine, metrics)
    if value == fix.value and gain is None:
        return fix
    return msgspec.structs.replace(fix, value=value, predicted_gain=gain)


def _net_gain(
    fix: Fix, settings: Settings | None, machine: Machine, metrics: Mapping[str, object]
) -> float | None:
    if fix.knob != "dataloader.num_workers":
        return None
    loader = settings.dataloader if settings is not None else None
    current = loader.num_workers if loader is not None else None
    if current is None:
        seen = metrics.get("loader_workers")
        current = int(seen) if isinstance(seen, int | float) else 0
    threads = settings.threads if settings is not None else None
    usable = threads.usable_cores if threads is not None else None
    fit = worker_fit(current, metrics, machine, usable)
    return fit.predicted_gain if fit is not None else None


def resolve_verdict(
    verdict: Verdict,
    settings: Settings | None,
    machine: Machine,
    metrics: Mapping[str, object],
    argv: Sequence[str] | None = None,
    stacks: Sequence[WeightedStack] | None = None,
) -> Verdict:
    """`verdict` with each finding's fixes resolved for the job whose `settings` these are
    (empty where no agent saw them: what the values need is then missing, and a value in words
    drops its fix), and its code fixes located in the job's `stacks` (None: none were
    recorded), DDP's options at the job's `DistributedDataParallel(...)` line."""
    if not verdict.findings:
        return verdict
    env = _job_env(settings)
    places = _known_places(settings)
    findings = [
        located(_resolved_finding(finding, settings, machine, metrics, argv, env), stacks, places)
        for finding in verdict.findings
    ]
    # Stable: within a severity the diagnosis's order (by class score) stands.
    findings.sort(key=lambda f: (f.bottleneck_class != verdict.bottleneck, _ORDER[f.severity]))
    return msgspec.structs.replace(verdict, findings=tuple(findings))


_ORDER = {"high": 0, "medium": 1, "low": 2}


def _resolved_finding(
    finding: Finding,
    settings: Settings | None,
    machine: Machine,
    metrics: Mapping[str, object],
    argv: Sequence[str] | None,
    env: Mapping[str, str],
) -> Finding:
    resolved = [resolve_fix(fix, settings, machine, metrics, argv, env) for fix in finding.fixes]
    kept = [fix for fix in resolved if fix is not None]
    fixes = tuple(f for f in kept if f.predicted_gain is None or f.predicted_gain >= OFFER_MIN_GAIN)
    if fixes == finding.fixes:
        return finding
    message = finding.message + "".join(_not_offered(f, metrics) for f in kept if f not in fixes)
    gains = [f.predicted_gain for f in fixes]
    severity = finding.severity
    if not fixes and len(kept) > len(fixes):
        severity = "low"  # its one remedy would not pay here
    elif fixes and all(g is not None for g in gains):
        severity = severity_for_gain(severity, max(g for g in gains if g is not None))
    return msgspec.structs.replace(finding, fixes=fixes, message=message, severity=severity)


def _not_offered(fix: Fix, metrics: Mapping[str, object]) -> str:
    """Why a fix predicted at about 1.0x is not offered, in the finding's message."""
    cpu = metrics.get("loader_cpu_share")
    what = f"{fix.knob} = {format_value(fix.value)}"
    why = (
        f"the loading is {cpu:.0%} CPU work, which would take its cores from the math"
        if isinstance(cpu, float)
        else "it would take its cores from the math"
    )
    return f" {what} is not offered: {why} (predicted {fix.predicted_gain:.2f}x net)."


_ENV_SEEN = {"OMP_NUM_THREADS": "omp_num_threads_env", "OMP_PROC_BIND": "omp_proc_bind_env"}


def _job_env(settings: Settings | None) -> dict[str, str]:
    """The variables the agent saw set in the job that decide a fix's current value."""
    threads = settings.threads if settings is not None else None
    if threads is None:
        return {}
    seen = {variable: getattr(threads, field) for variable, field in _ENV_SEEN.items()}
    return {variable: str(value) for variable, value in seen.items() if _known(value)}


def _known_places(settings: Settings | None) -> dict[str, str]:
    """Knob prefix -> the job's line that sets those options, where the agent saw it."""
    ddp = settings.ddp if settings is not None else None
    where = ddp.where if isinstance(ddp, DdpSettings) else None
    return {"ddp.": where} if isinstance(where, str) else {}


def _known(value: object) -> bool:
    return value is not None and not isinstance(value, msgspec.UnsetType)
