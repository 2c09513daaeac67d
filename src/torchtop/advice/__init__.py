"""Advice: the knob catalogue, and fixes turned into launch plans.

`knobs` holds every knob a rule may name (type, bounds, meaning, whether it can change
convergence, the routes by which it applies); `plan.plan_fix` turns a rule's fix into the next
`LaunchPlan` (command, environment, agent overrides) or says why it does not apply; `show`
prints a plan's changes before a relaunch. Pure: no processes are started here (that is
`relaunch/`), and torch is never imported.
"""

from torchtop.advice.knobs import CATALOGUE, Knob, find_knob
from torchtop.advice.machine import Machine, this_machine
from torchtop.advice.plan import AppliedFix, LaunchPlan, NotApplicable, initial_plan, plan_fix
from torchtop.advice.show import format_plan

__all__ = [
    "CATALOGUE",
    "AppliedFix",
    "Knob",
    "LaunchPlan",
    "Machine",
    "NotApplicable",
    "find_knob",
    "format_plan",
    "initial_plan",
    "plan_fix",
    "this_machine",
]
