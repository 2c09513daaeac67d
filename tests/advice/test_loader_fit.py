"""DataLoader workers sized against the cores free to the rank, with the gain net of what they
take from the math (`advice/loader_model.py`), and severity that follows the predicted gain.

Anchors measured bare on this 2-core machine (docs/benchmarks.md, `benchmarks/loader_fit.py`):
a Dataset that decodes on the CPU (~5% of the step) beside 2 intra-op threads ran 0.80-0.88x
with 1-4 workers; the demo, whose Dataset sleeps, ran 4.8x faster with 16 workers than with 2.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import RULES_DIR, WORKLOADS
from tests.live.test_live_verdicts import run_headless
from torchtop.advice.loader_model import Cores, cpu_demand, fit_workers, free_cores
from torchtop.advice.machine import Machine
from torchtop.advice.plan import initial_plan, plan_fix
from torchtop.advice.resolve import resolve_verdict
from torchtop.diagnosis.engine import diagnose
from torchtop.diagnosis.rules import load_rules
from torchtop.model.analysis import Metrics
from torchtop.model.findings import OFFER_MIN_GAIN, Fix, severity_for_gain
from torchtop.model.knobs import ALLOW_GROUPS
from torchtop.model.plan import NotApplicable
from torchtop.runs.records import LoaderSettings, Settings, ThreadSettings

TREE = load_rules(RULES_DIR)
DECODE_JOB = WORKLOADS / "cpu_decode.py"
DEMO = [sys.executable, "-m", "torchtop.demo.train"]
TWO_CORES = Machine(logical_cores=2, physical_cores=2)
FULL = Cores(free=2.0, compute=2.0)
"""2 intra-op threads on 2 cores: the compute fills them."""
DECODE = {"dataloader_share": 0.06, "loader_cpu_share": 0.99, "torch_num_threads": 2}
"""tests/workloads/cpu_decode.py as torchtop measured it on a quiet machine."""
SLEEPS = {"dataloader_share": 0.96, "loader_cpu_share": 0.05, "torch_num_threads": 2}
"""The demo (5 ms asleep a sample, num_workers=0), bare on a quiet machine."""


def test_a_cpu_bound_loader_beside_a_compute_that_fills_the_cores_gains_nothing_net() -> None:
    fit = fit_workers(0, DECODE, FULL)
    assert fit is not None and fit.predicted_gain < OFFER_MIN_GAIN
    assert fit.workers <= 2


def test_a_loader_that_sleeps_is_given_more_workers_than_cores() -> None:
    fit = fit_workers(0, SLEEPS, FULL)
    assert fit is not None and fit.workers >= 16 and fit.predicted_gain > 5.0


def test_the_count_follows_the_loaders_cpu_not_a_cap() -> None:
    counts = [
        fit.workers
        for cpu in (0.02, 0.25, 0.5)
        if (fit := fit_workers(0, {**SLEEPS, "loader_cpu_share": cpu}, Cores(8.0, 2.0)))
    ]
    assert counts == sorted(counts, reverse=True) and counts[0] > 8 > counts[-1]


def test_idle_cores_take_the_cpu_work_so_workers_pay_where_the_compute_leaves_cores_free() -> None:
    fit = fit_workers(0, {**DECODE, "dataloader_share": 0.3}, Cores(free=8.0, compute=2.0))
    assert fit is not None and fit.predicted_gain >= 1.4


def test_cores_other_processes_use_are_not_free_to_the_job() -> None:
    busy = {**SLEEPS, "other_cores_used": 1.5, "torch_num_threads": 1}
    assert free_cores(busy, 2, 1) == Cores(0.5, 0.5)
    assert free_cores({**busy, "other_cores_used": None}, 2, 1) == Cores(2.0, 1.0)
    assert free_cores({"other_cores_used": 2.0}, 4, 2) == Cores(3.0, 3.0)


def test_under_load_a_decoding_loader_s_run_queue_wait_counts_as_cpu_not_storage() -> None:
    # cpu_decode beside two busy loops: its thread's CPU is half its wall time, the rest on
    # the run queue, as the job's threads wait (runqueue_wait_share); read as storage wait,
    # that half would make workers look free.
    contended = {**DECODE, "dataloader_share": 0.2, "loader_cpu_share": 0.5}
    cores = free_cores({**contended, "other_cores_used": 0.9}, 2, 1)
    misread = fit_workers(0, contended, cores)
    assert misread is not None and misread.predicted_gain > 1.1  # half the decode "free"
    contended["runqueue_wait_share"] = 0.5
    fit = fit_workers(0, contended, cores)
    assert cpu_demand(0.5, 0.5) == pytest.approx(1.0)
    assert fit is not None and fit.predicted_gain < OFFER_MIN_GAIN


def test_under_load_a_loader_that_sleeps_still_gets_workers() -> None:
    contended = {**SLEEPS, "loader_cpu_share": 0.06, "runqueue_wait_share": 0.5}
    cores = free_cores({**contended, "other_cores_used": 1.7}, 2, 1)
    fit = fit_workers(0, contended, cores)
    assert cpu_demand(0.06, 0.5) == pytest.approx(0.12)
    assert fit is not None and fit.workers >= 2 and fit.predicted_gain > 2.0


def test_without_the_loaders_cpu_measured_there_is_no_model() -> None:
    assert fit_workers(0, {"dataloader_share": 0.5}, FULL) is None


def test_no_finding_is_high_under_a_tenth_and_none_medium_under_five_percent() -> None:
    assert severity_for_gain("high", 1.09) == "medium"
    assert severity_for_gain("high", 1.04) == "low"
    assert severity_for_gain("high", 1.10) == "high"
    assert severity_for_gain("low", 3.0) == "low"
    assert severity_for_gain("high", None) == "high"


def cpu_decode_verdict(metrics: Mapping[str, float]) -> tuple[str, list[str], str]:
    job: Metrics = {"has_gpu": False, "steps_count": 40, "cpu_exec_share": 0.85,
                    "loader_workers": 0, "dataloader_num_workers": 0, "rank_cores": 2,
                    "local_ranks": 1, "communication_share": 0.0, "memcpy_share": 0.01,
                    **metrics}  # fmt: skip
    settings = Settings(
        dataloader=LoaderSettings(num_workers=0),
        threads=ThreadSettings(torch_num_threads=2, usable_cores=2),
    )
    verdict = resolve_verdict(diagnose(TREE, job), settings, TWO_CORES, job)
    loader = next(f for f in verdict.findings if f.rule == "dataloader-single-process")
    return loader.severity, [fix.knob for fix in loader.fixes], loader.message


def test_workers_predicted_at_about_one_x_net_are_not_offered_and_the_finding_says_why() -> None:
    severity, knobs, message = cpu_decode_verdict(DECODE)
    assert (severity, knobs) == ("low", [])
    assert "dataloader.num_workers = 1 is not offered" in message and "99% CPU" in message


def test_workers_that_pay_are_offered_with_their_net_gain_and_a_severity_to_match() -> None:
    severity, knobs, _ = cpu_decode_verdict(SLEEPS)
    assert (severity, knobs) == ("high", ["dataloader.num_workers"])


def loader_fixes(report: dict[str, Any]) -> list[dict[str, Any]]:
    return [fix for f in report["findings"] for fix in f["fixes"]]


def assert_severity_follows_the_gain(report: dict[str, Any]) -> None:
    for finding in report["findings"]:
        gains = [fix.get("predicted_gain") for fix in finding["fixes"]]
        gains = [g for g in gains if g is not None] + [finding["predicted_gain"]]
        if finding["severity"] == "high" and None not in gains:
            assert min(gains) >= 1.10, finding
    for fix in loader_fixes(report):
        assert fix.get("predicted_gain") is None or fix["predicted_gain"] >= OFFER_MIN_GAIN


@pytest.mark.slow
@pytest.mark.alone
def test_a_job_decoding_on_the_cores_its_threads_fill_is_offered_no_fix_that_measured_slower(
    tmp_path: Path,
) -> None:
    cores = len(os.sched_getaffinity(0))
    job = [sys.executable, str(DECODE_JOB), "--threads", str(cores), "--steps", "150"]
    report = run_headless(tmp_path, job)
    metrics = report["metrics"]
    assert metrics["loader_workers"] == 0 and metrics["torch_num_threads"] == cores
    assert metrics["loader_cpu_share"] > 0.5, metrics  # the decode is CPU work, and seen as such
    assert_severity_follows_the_gain(report)
    # Bare A/B on 2 cores (docs/benchmarks.md): 1, 2 and 4 workers 0.80-0.88x, pinned 0.84-0.90x.
    offered = {fix["knob"] for fix in loader_fixes(report)}
    assert not offered & {"dataloader.num_workers", "env.OMP_PROC_BIND"}, report["findings"]
    loader = [f for f in report["findings"] if f["class"] == "dataloader"]
    assert loader and all(f["severity"] == "low" for f in loader), loader
    assert "is not offered" in loader[0]["message"]


def bare_rate(workers: int, steps: int = 100) -> float:
    """The demo's own rate with `workers`, run bare (no torchtop)."""
    argv = [*DEMO, "--steps", str(steps), "--num-workers", str(workers)]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=True)
    return float(re.findall(r"([0-9.]+) steps/s", done.stdout)[-1])


@pytest.mark.slow
@pytest.mark.alone
def test_the_demo_is_offered_the_worker_count_that_measures_fastest_above_the_cores(
    tmp_path: Path,
) -> None:
    report = run_headless(tmp_path, [*DEMO, "--steps", "40"])
    assert_severity_follows_the_gain(report)
    offered = [fix for fix in loader_fixes(report) if fix["knob"] == "dataloader.num_workers"]
    assert len(offered) == 1, report["findings"]
    workers = int(offered[0]["value"])
    assert workers > len(os.sched_getaffinity(0))
    # Bare A/B, alternating: half as many and twice as many are no faster.
    counts = (workers // 2, workers, workers * 2)
    rates: dict[int, list[float]] = {count: [] for count in counts}
    for _ in range(2):
        for count in counts:
            rates[count].append(bare_rate(count))
    best = {count: max(values) for count, values in rates.items()}
    print(f"offered {workers} workers; bare steps/s: {rates}")
    assert best[workers] >= 0.9 * max(best.values()), rates


RUNS_64: Metrics = {"has_gpu": False, "steps_count": 40, "dataloader_share": 0.3,
                    "loader_workers": 64, "dataloader_num_workers": 64, "rank_cores": 2,
                    "local_ranks": 1, "torch_num_threads": 1, "loader_cpu_share": None}  # fmt: skip
"""starved_options after `tune` kept 0 -> 64 workers: still waiting on its loader, its
workers not yet sampled (no loader CPU share), which once sized them 64 -> 8."""


def starved_fixes(job: Metrics, workers: int) -> list[tuple[str, object]]:
    settings = Settings(
        dataloader=LoaderSettings(num_workers=workers),
        threads=ThreadSettings(torch_num_threads=1, usable_cores=2),
    )
    verdict = resolve_verdict(diagnose(TREE, job), settings, TWO_CORES, job)
    starved = next(f for f in verdict.findings if f.rule == "dataloader-starved")
    return [(fix.knob, fix.value) for fix in starved.fixes]


def test_a_worker_fix_never_offers_fewer_workers_than_the_job_runs() -> None:
    offered = starved_fixes(RUNS_64, 64)
    assert "dataloader.num_workers" not in dict(offered), offered
    measured = {**RUNS_64, "loader_cpu_share": 0.0}
    assert "dataloader.num_workers" not in dict(starved_fixes(measured, 64))
    two = {**RUNS_64, "loader_workers": 2, "dataloader_num_workers": 2}
    assert dict(starved_fixes(two, 2))["dataloader.num_workers"] == 4  # the rule's floor


def test_a_worker_count_sized_at_or_below_the_current_says_why_it_is_not_tried() -> None:
    fix = Fix(knob="dataloader.num_workers", value=4, apply="override", description="More.")
    settings = Settings(dataloader=LoaderSettings(num_workers=64))
    base = initial_plan(["python", "train.py"], {}, "/w")
    planned = plan_fix(fix, base, settings, TWO_CORES, allow=ALLOW_GROUPS, metrics=RUNS_64)
    assert isinstance(planned, NotApplicable) and planned.in_effect, planned
    assert "sized at 8" in planned.reason and "below the 64 the job runs" in planned.reason
    assert "never lowers the count" in planned.reason


def test_a_loader_that_only_sleeps_gets_at_most_eight_workers_a_free_core() -> None:
    asleep = {"dataloader_share": 0.99, "loader_cpu_share": 0.0, "torch_num_threads": 1}
    fit = fit_workers(0, asleep, Cores(free=2.0, compute=1.0))
    assert fit is not None and fit.workers == 16  # bare: 16 ran 70 steps/s, 32 48, 64 29
    many = fit_workers(0, asleep, Cores(free=16.0, compute=1.0))
    assert many is not None and many.workers == 64
    busy = fit_workers(0, asleep, Cores(free=0.5, compute=0.5))
    assert busy is not None and busy.workers == 8
