"""A fix's value made concrete for this job on this machine, and checked against its knob.

Rules speak in terms a reader understands ("physical cores", "cores / (workers + 1)", "2x");
the relaunch needs a number. The number of DataLoader workers is sized from what was measured
(`advice/loader_model.py`): the wait they hide and the CPU their loading takes from the math,
against the cores free to the rank, so a loader that sleeps on storage gets more workers than
cores (the demo job on 2 cores: 4 workers 12 steps/s, 8 workers 30 steps/s) and one that
decodes on cores the compute already fills gets none worth offering. Where the loader's CPU is
not measured (a recorded trace, workers not yet sampled), the wait alone sizes them: with a
share `s` of each step waiting and `n` workers, loading one batch takes about `s/(1-s)` compute
steps in process (`n/(1-s)` with workers), at least the rule's value and at most
`max(8, cores)`. A worker fix never lowers the count: where either sizing lands below the
workers the job runs, the fix is as good as in effect (`InEffect`; at them, it is), not
offered, and the reason is what `tune` lists among the fixes it did not try (tune of
starved_options once kept 0 -> 64 workers, then offered 64 -> 8: its workers not yet sampled).
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from torchtop.advice.job import JobView
from torchtop.advice.loader_model import LoaderFit, fit_workers, free_cores
from torchtop.advice.machine import Machine, rank_share
from torchtop.model.fix_values import FALSE_WORDS, TRUE_WORDS, symbolic_value
from torchtop.model.knobs import Knob

WORKERS_CAP_FLOOR = 8


class Unresolvable(ValueError):
    """The value cannot be made concrete (or is out of bounds): the fix does not apply."""


class InEffect(Unresolvable):
    """The job already runs with as much as the fix would set (8 workers sized for a job that
    runs 64): not a change to offer, as if the value were in effect."""


def resolve_value(
    knob: Knob,
    raw: object,
    current: object | None,
    job: JobView,
    machine: Machine,
    metrics: Mapping[str, object],
) -> object:
    """The concrete, type-checked value of `raw` for `knob`."""
    value = _symbolic(raw, current, job, machine)
    if knob.name == "dataloader.num_workers":
        value = size_workers(_as_int(value), _int_or_none(current), metrics, machine, job)
    if knob.name == "train.batch_size":
        value = fit_batch(_as_int(value), _int_or_none(current), metrics)
    if knob.name == "env.LD_PRELOAD":
        path = machine.library(str(value))
        if path is None:
            raise Unresolvable(f"{value} is not installed on this machine")
        value = path
    return check_value(knob, coerce(knob, value))


def _symbolic(raw: object, current: object | None, job: JobView, machine: Machine) -> object:
    form = symbolic_value(raw)
    if form is None:
        return raw
    share = rank_share(machine, job.usable_cores)
    if form.quantity == "physical_cores":
        return share.physical_cores
    if form.quantity == "logical_cores":
        return share.cores
    if form.quantity == "cores_per_worker":
        return max(1, share.cores // ((job.workers or 0) + 1))
    number = _number_or_none(current)
    if number is None:
        raise Unresolvable(f"{raw} of what: the current value is not known")
    result = number * form.factor
    return round(result) if isinstance(current, int) else result


def worker_fit(
    current: int | None,
    metrics: Mapping[str, object],
    machine: Machine,
    usable_cores: int | None = None,
) -> LoaderFit | None:
    """The workers the measured wait and loading CPU call for on the cores free to this rank,
    with their net predicted gain; None where the loader's CPU share is not measured."""
    cores = free_cores(metrics, rank_share(machine, usable_cores).cores, machine.local_ranks)
    return fit_workers(current or 0, metrics, cores)


def size_workers(
    floor: int,
    current: int | None,
    metrics: Mapping[str, object],
    machine: Machine,
    job: JobView | None = None,
) -> int:
    """The workers `worker_fit` sizes; where it cannot, enough to hide the measured wait,
    within [floor, max(8, the rank's cores)]."""
    fit = worker_fit(current, metrics, machine, job.usable_cores if job is not None else None)
    sized = fit.workers if fit is not None else _by_wait(floor, current or 0, metrics, machine)
    if current is not None and sized < current:  # at `current`: "already N" (`plan_fix`)
        raise InEffect(
            f"sized at {sized} for this job and machine, below the {current} the job runs: "
            "a worker fix never lowers the count"
        )
    return sized


def _by_wait(floor: int, workers: int, metrics: Mapping[str, object], machine: Machine) -> int:
    """Enough workers to hide the measured wait, within [floor, max(8, the rank's cores)]."""
    cap = max(WORKERS_CAP_FLOOR, rank_share(machine).cores)
    share = metrics.get("dataloader_share")
    if not isinstance(share, float) or not 0.0 < share < 1.0:
        return min(floor, cap)
    hide = share / (1.0 - share) if workers == 0 else workers / (1.0 - share)
    return min(max(floor, math.ceil(hide - 1e-9)), cap)


def fit_batch(batch: int, current: int | None, metrics: Mapping[str, object]) -> int:
    """`batch`, capped at the largest batch predicted to fit in device memory where the
    trace's memory events predict one (`memory_batch_factor_max`)."""
    factor = metrics.get("memory_batch_factor_max")
    if current is None or not isinstance(factor, int | float) or isinstance(factor, bool):
        return batch
    largest = math.floor(current * factor)
    if largest <= current:
        raise Unresolvable(
            f"a batch above {current} is predicted not to fit in device memory "
            f"(at most {factor:.2f}x; activations grow with the batch, weights do not)"
        )
    return min(batch, largest)


def coerce(knob: Knob, value: object) -> object:
    if knob.type == "bool":
        if isinstance(value, bool):
            return value
        text = str(value).strip().lower()
        if text in TRUE_WORDS | FALSE_WORDS:
            return text in TRUE_WORDS
        raise Unresolvable(f"{value!r} is not a yes/no value")
    if knob.type == "int":
        return _as_int(value)
    if knob.type == "float":
        number = _number_or_none(value)
        if number is None:
            raise Unresolvable(f"{value!r} is not a number")
        return number
    return str(value)


def check_value(knob: Knob, value: object) -> object:
    if isinstance(value, int | float) and not isinstance(value, bool):
        if knob.minimum is not None and value < knob.minimum:
            raise Unresolvable(f"{value} is below {knob.name}'s minimum {knob.minimum:g}")
        if knob.maximum is not None and value > knob.maximum:
            raise Unresolvable(f"{value} is above {knob.name}'s maximum {knob.maximum:g}")
    if knob.choices and str(value) not in knob.choices:
        raise Unresolvable(f"{value!r} is not one of {', '.join(knob.choices)}")
    return value


def same_value(a: object, b: object) -> bool:
    """Whether two settings mean the same (`"2"` from the environment equals 2)."""
    if a is None or b is None:
        return False
    if isinstance(a, bool) or isinstance(b, bool):
        return str(a).lower() == str(b).lower()
    left, right = _number_or_none(a), _number_or_none(b)
    if left is not None and right is not None:
        return left == right
    return str(a) == str(b)


def _as_int(value: object) -> int:
    number = _number_or_none(value)
    if number is None or number != int(number):
        raise Unresolvable(f"{value!r} is not a whole number")
    return int(number)


def _int_or_none(value: object) -> int | None:
    number = _number_or_none(value)
    return int(number) if number is not None and number == int(number) else None


def _number_or_none(value: object) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    try:
        return float(str(value))
    except ValueError:
        return None
