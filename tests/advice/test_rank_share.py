"""Thread, affinity and worker values resolved against the node: its cores, every rank on it,
each rank's DataLoader workers, and what the job already runs with.

A machine of N cores with K local ranks gives each rank N // K (at least 1); a rank its launcher
confined to fewer cores than the node's has its own set as its share; a fix whose value comes out
as what the job runs with (torch's thread count, the variable it was started with) is dropped;
a value in words that cannot be made a number drops its fix instead of being shown as words.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import RULES_DIR, WORKLOADS
from torchtop.advice.job import JobView
from torchtop.advice.machine import Machine, rank_share
from torchtop.advice.resolve import resolve_fix, resolve_verdict
from torchtop.advice.values import resolve_value
from torchtop.assess.node_share import ddp_metrics, expected_buckets
from torchtop.diagnosis.engine import diagnose
from torchtop.diagnosis.rules import load_rules
from torchtop.model.findings import Fix
from torchtop.model.knobs import CATALOGUE
from torchtop.runs.records import DdpSettings, LoaderSettings, Settings, ThreadSettings

TREE = load_rules(RULES_DIR)
CPU_JOB: dict[str, Any] = {
    "has_gpu": False, "steps_count": 30, "breakdown_steps": 30, "cpu_exec_share": 0.9,
    "other_share": 0.1, "kernel_share": 0.0, "dataloader_share": 0.0, "memcpy_share": 0.0,
    "communication_share": 0.0,
}  # fmt: skip
OMP = Fix("env.OMP_NUM_THREADS", "physical cores", "env", "one thread per physical core")
CORES = Fix("torch.num_threads", "cores", "override", "one thread per core")


def node(cores: int, ranks: int, physical: int | None = None) -> Machine:
    return Machine(cores, physical or cores, local_ranks=ranks)


def threads(
    torch_threads: int | None, env: str | None = None, usable: int | None = None
) -> Settings:
    return Settings(
        threads=ThreadSettings(
            torch_num_threads=torch_threads, omp_num_threads_env=env, usable_cores=usable
        )
    )


@pytest.mark.parametrize(
    ("cores", "ranks", "share"),
    [(2, 1, 2), (2, 2, 1), (16, 4, 4), (16, 3, 5), (2, 4, 1), (64, 8, 8)],
)
def test_each_rank_gets_the_nodes_cores_divided_among_its_ranks(
    cores: int, ranks: int, share: int
) -> None:
    assert rank_share(node(cores, ranks)).cores == share


def test_physical_cores_are_shared_the_same_way_counting_hardware_threads_once() -> None:
    assert rank_share(node(16, 2, physical=8)) == rank_share(Machine(16, 8, local_ranks=2))
    assert rank_share(node(16, 2, physical=8)).physical_cores == 4
    assert rank_share(node(16, 1, physical=8)).physical_cores == 8


def test_a_rank_its_launcher_confined_to_fewer_cores_has_its_own_set_as_its_share() -> None:
    # 4 ranks on 16 cores, each bound to 4 by its launcher: 4 each, not 16 // 4 // ...
    assert rank_share(node(16, 4), allowed_cores=4).cores == 4
    assert rank_share(node(16, 1), allowed_cores=3).cores == 3
    # Allowed the whole node: shared among the ranks.
    assert rank_share(node(16, 4), allowed_cores=16).cores == 4


def test_torchruns_one_thread_for_two_ranks_on_two_cores_is_not_changed() -> None:
    settings = threads(1, env="1", usable=2)
    assert resolve_fix(OMP, settings, node(2, 2), {}) is None
    assert resolve_fix(CORES, settings, node(2, 2), {}) is None


def test_two_threads_per_rank_for_two_ranks_on_two_cores_are_told_one() -> None:
    fixed = resolve_fix(CORES, threads(2, usable=2), node(2, 2), {})
    assert fixed is not None and fixed.value == 1
    fixed = resolve_fix(OMP, threads(2, env="2", usable=2), node(2, 2), {})
    assert fixed is not None and fixed.value == 1


def test_one_process_already_at_one_thread_per_core_is_offered_nothing() -> None:
    assert resolve_fix(OMP, threads(2, usable=2), node(2, 1), {}) is None
    assert resolve_fix(OMP, threads(8, usable=8), node(8, 1), {}) is None
    fixed = resolve_fix(OMP, threads(4, usable=8), node(8, 1), {})
    assert fixed is not None and fixed.value == 8


def test_workers_per_rank_share_the_ranks_cores() -> None:
    job = JobView(settings=Settings(dataloader=LoaderSettings(num_workers=3)))
    value = resolve_value(
        CATALOGUE["env.OMP_NUM_THREADS"], "cores / (workers + 1)", None, job, node(16, 2), {}
    )
    assert value == 2  # 16 cores, 2 ranks: 8 each; 8 // (3 workers + 1)


def test_a_value_in_words_that_cannot_be_made_a_number_drops_the_fix() -> None:
    doubled = Fix("train.batch_size", "2x", "arg", "twice the batch")
    # No agent saw the batch size: "2x" of what? Not shown as "2x".
    assert resolve_fix(doubled, None, node(2, 1), {}) is None


def test_a_job_seen_without_an_agent_still_gets_numbers_not_words() -> None:
    verdict = diagnose(TREE, {**CPU_JOB, "torch_num_threads": 1})
    resolved = resolve_verdict(verdict, None, node(4, 1), {})
    values = [fix.value for finding in resolved.findings for fix in finding.fixes]
    assert values and not any(isinstance(v, str) and "cores" in v for v in values), values


def test_pinning_is_offered_only_to_one_rank_without_workers_at_one_thread_per_core() -> None:
    def knobs(**metrics: float | str | None) -> set[str]:
        verdict = diagnose(TREE, {**CPU_JOB, **metrics})
        assert "cpu-math-bound" in [f.rule for f in verdict.findings], verdict
        return {fix.knob for f in verdict.findings for fix in f.fixes}

    alone = {"local_ranks": 1, "loader_workers": 0, "torch_num_threads": 4, "rank_cores": 4}
    assert "env.OMP_PROC_BIND" in knobs(**alone)
    # Under 4 cores it measured 0.84-1.03x bare (docs/benchmarks.md): not offered.
    assert "env.OMP_PROC_BIND" not in knobs(**{**alone, "torch_num_threads": 2, "rank_cores": 2})
    assert "env.OMP_PROC_BIND" not in knobs(**{**alone, "local_ranks": 2, "rank_cores": 1})
    assert "env.OMP_PROC_BIND" not in knobs(**{**alone, "loader_workers": 2})
    assert "env.OMP_PROC_BIND" not in knobs(**{**alone, "torch_num_threads": 1})
    assert "env.OMP_PROC_BIND" not in knobs(**{**alone, "local_ranks": None})


def test_pinning_the_job_already_runs_with_is_not_offered_again() -> None:
    bind = Fix("env.OMP_PROC_BIND", "close", "env", "pin")
    settings = Settings(threads=ThreadSettings(torch_num_threads=2, usable_cores=2,
                                               omp_proc_bind_env="close"))  # fmt: skip
    assert resolve_fix(bind, settings, node(2, 1), {}) is None
    assert resolve_fix(bind, threads(2, usable=2), node(2, 1), {}) == bind


@pytest.mark.parametrize(
    ("gradient_bytes", "cap_mib", "buckets"),
    [(430_000, 25, 1), (50_380_800, 25, 3), (50_380_800, 100, 1), (20 * 2**20, 10, 2)],
)
def test_ddp_buckets_are_estimated_as_ddp_fills_them(
    gradient_bytes: int, cap_mib: int, buckets: int
) -> None:
    # 50 MB at the default cap: DDP 2.13 counted 3 buckets (`num_buckets_reduced`).
    assert expected_buckets(gradient_bytes, cap_mib * 2**20) == buckets


def test_ddps_own_bucket_count_wins_over_the_estimate() -> None:
    told = DdpSettings(gradient_bytes=50_380_800, bucket_cap_bytes=25 * 2**20, bucket_count=4)
    assert ddp_metrics(told)["ddp_bucket_count"] == 4
    assert ddp_metrics(None) == {}


def test_the_bucket_size_patch_rewrites_the_ddp_line_it_was_located_at() -> None:

    from torchtop.advice.patches import code_patch

    job = WORKLOADS / "ddp_comm.py"
    line, text = next(
        (n, t)
        for n, t in enumerate(job.read_text().splitlines(), 1)
        if "= DistributedDataParallel(" in t
    )
    fix = Fix("ddp.bucket_cap_mb", 10, "code", "smaller buckets", where=f"{job}:{line}: {text}")
    patch = code_patch(fix)
    assert f"# at {job}:{line}, the line that built DistributedDataParallel:" in patch
    assert f"-{text}" in patch
    assert f"+{text[:-1]}, bucket_cap_mb=10)" in patch
    again = Fix("ddp.bucket_cap_mb", 100, "code", "", where=f"{job}:{line}: {text}")
    assert "bucket_cap_mb=100)" in code_patch(again)
