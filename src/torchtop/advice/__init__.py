"""Advice: the knob catalogue, and fixes turned into launch plans.

`model.knobs` holds every knob a rule may name (type, bounds, meaning, whether it can change
convergence, the routes by which it applies); `plan.plan_fix` turns a rule's fix into the next
`LaunchPlan` (command, environment, agent overrides) or says why it does not apply; `show`
prints a plan's changes before a relaunch. Pure: no processes are started here (that is
`trials/`), and torch is never imported.

Nothing is imported here: `analyze` reaches `locate` and the model's fixes without the
planner, whose machine probe brings psutil and subprocess (a tenth of its start-up).
"""
