"""From a fix to a launch plan: the command, environment and overrides that apply it.

`plan_fix` takes the rule's fix, the plan the job runs with now (`initial_plan` for the user's
own command) and what the agent saw (its `settings` record, the script's argv), and returns the
next `LaunchPlan`, or `NotApplicable` with the reason (and, for code changes, the patch). The
route: the script's own option where it has one for the knob (`arg`: the user's command stays
the source of truth), else an agent `override`, else an `env` variable; a `code` fix is never
applied. A knob that can change what the model learns is planned only when its group is in
`allow`. Pure: the machine and the measurements come in as values.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import replace

from torchtop.advice.args import ScriptOption, find_option, set_option
from torchtop.advice.job import JobView
from torchtop.advice.machine import Machine
from torchtop.advice.patches import code_patch
from torchtop.advice.values import InEffect, Unresolvable, resolve_value, same_value
from torchtop.model.findings import Fix, format_value
from torchtop.model.knobs import Knob, env_variable, find_knob
from torchtop.model.plan import AppliedFix, LaunchPlan, NotApplicable
from torchtop.runs.records import Settings


def initial_plan(command: Sequence[str], env: Mapping[str, str], cwd: str) -> LaunchPlan:
    clean = {k: v for k, v in env.items() if not k.startswith("TORCHTOP_")}
    return LaunchPlan(tuple(command), clean, cwd)


def plan_fix(
    fix: Fix,
    base: LaunchPlan,
    settings: Settings | None,
    machine: Machine,
    bindings: Mapping[str, str] | None = None,
    allow: Collection[str] = (),
    metrics: Mapping[str, object] | None = None,
    argv: Sequence[str] | None = None,
) -> LaunchPlan | NotApplicable:
    """The plan that applies `fix` on top of `base`, or why it cannot be applied."""
    knob = find_knob(fix.knob)
    if knob is None:
        return NotApplicable(fix, f"{fix.knob} is not in torchtop's knob catalogue")
    job = JobView(settings, base.env, base.overrides, argv)
    refusal = _refusal(fix, knob, job, allow)
    if refusal is not None:
        return refusal
    option = find_option(knob, job.cli_options, bindings or {}) if "arg" in knob.routes else None
    route = _route(knob, option)
    if route is None:
        return NotApplicable(
            fix,
            f"{fix.knob} can only be set through the script's command line, and torchtop saw no "
            f'option for it: bind one in torchtop.toml ([bind] "{fix.knob}" = "--flag")',
        )
    current = _current(knob, fix.knob, route, option, job)
    try:
        value = resolve_value(knob, fix.value, current, job, machine, metrics or {})
    except InEffect as exc:
        return NotApplicable(fix, f"{fix.knob}: {exc}", in_effect=True)
    except Unresolvable as exc:
        return NotApplicable(fix, f"{fix.knob} = {fix.value}: {exc}")
    if same_value(value, current):
        return NotApplicable(fix, f"{fix.knob} is already {format_value(value)}", in_effect=True)
    described = fix.description
    if format_value(value) != format_value(fix.value):
        described += f" (the rule says {fix.value}; {format_value(value)} for this job and machine)"
    applied = AppliedFix(fix.knob, value, route, described)
    return _apply(base, applied, knob, option, current, argv)


def _refusal(fix: Fix, knob: Knob, job: JobView, allow: Collection[str]) -> NotApplicable | None:
    if knob.routes == ("code",) or fix.apply == "code":
        return NotApplicable(fix, "a change to the script: shown, never applied", code_patch(fix))
    if knob.allow_group is not None and knob.allow_group not in allow:
        return NotApplicable(
            fix,
            f"{fix.knob} can change convergence: try it only with --allow {knob.allow_group}",
        )
    if knob.needs_gpu and job.has_gpu is False:
        return NotApplicable(fix, f"{fix.knob} only matters on a GPU, and the job runs on CPU")
    if knob.needs_workers and job.workers == 0:
        return NotApplicable(fix, f"{fix.knob} only matters with DataLoader workers (it has 0)")
    return None


def _route(knob: Knob, option: ScriptOption | None) -> str | None:
    for route in knob.routes:
        if route != "arg" or option is not None:
            return route
    return None


def _current(
    knob: Knob, name: str, route: str, option: ScriptOption | None, job: JobView
) -> object | None:
    if route == "env":
        return job.current_env(knob, name)
    seen = job.current_setting(name)
    if seen is None and route == "arg" and option is not None:
        return option.value
    return seen


def _apply(
    base: LaunchPlan,
    applied: AppliedFix,
    knob: Knob,
    option: ScriptOption | None,
    current: object | None,
    argv: Sequence[str] | None,
) -> LaunchPlan:
    shown_old = "unset" if current is None else format_value(current)
    new_text = format_value(applied.value)
    command, env, overrides = base.command, dict(base.env), dict(base.overrides)
    if applied.route == "arg" and option is not None:
        command = tuple(set_option(base.command, option, applied.value, argv))
        change = f"option {option.long_flag}: {shown_old} -> {new_text}"
    elif applied.route == "env":
        variable = env_variable(knob, applied.knob) or applied.knob
        env[variable] = merge_env(variable, base.env.get(variable), new_text)
        change = f"env {variable}: {base.env.get(variable, 'unset')} -> {env[variable]}"
    else:
        overrides[applied.knob] = applied.value
        change = f"override {applied.knob}: {shown_old} -> {new_text}"
    return replace(
        base,
        command=command,
        env=env,
        overrides=overrides,
        fixes=(*base.fixes, applied),
        route=applied.route,
        # The kind is in `changes` (`option --num-workers: 0 -> 4`), said once.
        description=f"{applied.knob} = {new_text}: {applied.description}",
        changes=(change,),
    )


def merge_env(variable: str, old: str | None, new: str) -> str:
    """A variable's new value, keeping what the old one holds where the new one adds to it."""
    if not old:
        return new
    if variable == "LD_PRELOAD":
        kept = [p for p in old.replace(":", " ").split() if p != new]
        return " ".join([new, *kept])
    if variable == "PYTORCH_CUDA_ALLOC_CONF":
        options = dict(o.split(":", 1) for o in old.split(",") if ":" in o)
        options.update(dict(o.split(":", 1) for o in new.split(",") if ":" in o))
        return ",".join(f"{k}:{v}" for k, v in options.items())
    return new
