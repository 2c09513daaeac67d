"""Symbolic values from the rules become concrete numbers for this job on this machine."""

from __future__ import annotations

import pytest

from torchtop.advice.job import JobView
from torchtop.advice.machine import Machine
from torchtop.advice.values import Unresolvable, resolve_value, same_value, size_workers
from torchtop.model.fix_values import value_problem
from torchtop.model.knobs import CATALOGUE
from torchtop.runs.records import LoaderSettings, Settings

TWO_CORES = Machine(logical_cores=2, physical_cores=2)
SIXTEEN_THREADS = Machine(logical_cores=16, physical_cores=8)


def resolve(
    knob: str,
    raw: object,
    current: object = None,
    job: JobView | None = None,
    machine: Machine = TWO_CORES,
    metrics: dict[str, object] | None = None,
) -> object:
    return resolve_value(CATALOGUE[knob], raw, current, job or JobView(), machine, metrics or {})


def test_physical_cores_is_the_machines_physical_core_count() -> None:
    assert resolve("env.OMP_NUM_THREADS", "physical cores", machine=SIXTEEN_THREADS) == 8


def test_cores_over_workers_plus_one_uses_the_jobs_dataloader_workers() -> None:
    job = JobView(settings=Settings(dataloader=LoaderSettings(num_workers=3)))
    assert (
        resolve("env.OMP_NUM_THREADS", "cores / (workers + 1)", job=job, machine=SIXTEEN_THREADS)
        == 4
    )
    assert resolve("env.OMP_NUM_THREADS", "cores / (workers + 1)", job=job) == 1


def test_a_multiple_is_of_the_current_value_and_needs_one() -> None:
    assert resolve("train.batch_size", "2x", current=32) == 64
    with pytest.raises(Unresolvable, match="current value is not known"):
        resolve("train.batch_size", "2x")


def test_a_larger_batch_is_capped_at_the_largest_the_memory_prediction_fits() -> None:
    fits: dict[str, object] = {"memory_batch_factor_max": 1.5}
    assert resolve("train.batch_size", "2x", current=32, metrics=fits) == 48
    assert (
        resolve("train.batch_size", "2x", current=32, metrics={"memory_batch_factor_max": 9.0})
        == 64
    )
    with pytest.raises(Unresolvable, match="predicted not to fit"):
        resolve("train.batch_size", "2x", current=32, metrics={"memory_batch_factor_max": 1.01})
    assert resolve("train.batch_size", "2x", current=32) == 64  # no prediction: the rule's


def test_workers_are_sized_to_hide_the_measured_wait_within_a_cap() -> None:
    # 80% of the step waiting on data with no workers: 4 steps of compute per batch loaded.
    assert size_workers(2, 0, {"dataloader_share": 0.8}, TWO_CORES) == 4
    # Starved nearly all the time: as many as the cap allows (8 on a small machine).
    assert size_workers(4, 0, {"dataloader_share": 0.98}, TWO_CORES) == 8
    assert size_workers(4, 0, {"dataloader_share": 0.98}, Machine(32, 16)) == 32
    # Without a measurement, the rule's own value.
    assert size_workers(4, 0, {}, TWO_CORES) == 4
    # Already starved with workers: more than now.
    assert size_workers(4, 4, {"dataloader_share": 0.5}, TWO_CORES) == 8


def test_values_are_checked_against_the_knobs_type_bounds_and_choices() -> None:
    assert resolve("dataloader.pin_memory", "true") is True
    assert resolve("env.KMP_BLOCKTIME", "1") == 1
    with pytest.raises(Unresolvable, match="below"):
        resolve("env.OMP_NUM_THREADS", 0)
    with pytest.raises(Unresolvable, match="not one of"):
        resolve("torch.float32_matmul_precision", "fastest")
    with pytest.raises(Unresolvable, match="not a whole number"):
        resolve("dataloader.prefetch_factor", "many")


def test_a_preload_is_resolved_to_a_library_that_exists_here_or_refused() -> None:
    machine = Machine(2, 2, {"libjemalloc": "/usr/lib/libjemalloc.so.2"})
    assert (
        resolve("env.LD_PRELOAD", "libjemalloc.so", machine=machine) == "/usr/lib/libjemalloc.so.2"
    )
    with pytest.raises(Unresolvable, match="not installed"):
        resolve("env.LD_PRELOAD", "libtcmalloc.so", machine=machine)


def test_settings_from_the_environment_compare_equal_to_numbers() -> None:
    assert same_value("2", 2)
    assert same_value(True, "true")
    assert not same_value(None, None)
    assert not same_value("close", "spread")


@pytest.mark.parametrize(
    ("knob", "raw"),
    [
        ("env.OMP_NUM_THREADS", "physical cores"),
        ("env.OMP_NUM_THREADS", " Logical Cores"),
        ("env.OMP_NUM_THREADS", "cores / (workers + 1)"),
        ("env.OMP_NUM_THREADS", "cores/(workers+1)"),
        ("env.OMP_NUM_THREADS", 2.5),
        ("env.OMP_NUM_THREADS", "3"),
        ("train.batch_size", "2x"),
        ("train.lr", "0.5x"),
        ("dataloader.pin_memory", "yes"),
        ("dataloader.pin_memory", "maybe"),
        ("env.OMP_PROC_BIND", "close"),
        ("env.OMP_PROC_BIND", "near"),
        ("env.KMP_BLOCKTIME", "fast"),
    ],
)
def test_the_rule_loader_accepts_exactly_the_values_the_planner_resolves(
    knob: str, raw: object
) -> None:
    """The loader refuses a fix's value with `value_problem`; the planner resolves it here."""
    try:
        resolve(knob, raw, current=32, machine=SIXTEEN_THREADS)
        resolved = True
    except Unresolvable:
        resolved = False
    assert (value_problem(CATALOGUE[knob], raw) is None) is resolved
