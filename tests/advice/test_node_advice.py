"""Advice from the whole node, on real jobs: thread and pinning fixes count every rank on it,
the cores a process may use are read from what it was started with, and a DDP bucket size is
offered only where it changes DDP's buckets, on the line that built `DistributedDataParallel`.

The outside truths: what each rank prints of itself (its pid and `torch.get_num_threads()`, the
`OMP_NUM_THREADS=1` torchrun set), the job's source (the DDP line), DDP's own logging data, and
`os.sched_getaffinity` of a bare process on this machine.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from tests.attach.test_attach_ranks import Job, attach, started
from tests.conftest import RULES_DIR, WORKLOADS, bare_torch_threads
from tests.live.test_live_verdicts import WINDOW_EARLY
from tests.live.two_nodes import free_port
from torchtop.advice.machine import cached_machine
from torchtop.advice.resolve import resolve_verdict
from torchtop.diagnosis.engine import diagnose
from torchtop.diagnosis.rules import load_rules
from torchtop.live.watch import LiveMonitor
from torchtop.runs.records import DdpSettings
from torchtop.runs.state import load_run

JOBS = WORKLOADS
DDP_MATH = JOBS / "ddp_math.py"
THREADED = JOBS / "threaded_math.py"
DDP_BIG = WORKLOADS / "ddp_comm.py"
TREE = load_rules(RULES_DIR)
THREAD_KNOBS = {
    "env.OMP_NUM_THREADS",
    "env.OMP_PROC_BIND",
    "env.KMP_BLOCKTIME",
    "env.KMP_AFFINITY",
    "torch.num_threads",
}


def torchrun(job: Path) -> list[str]:
    return [
        sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2",
        "--master-port", str(free_port()), str(job),
    ]  # fmt: skip


def run_report(
    tmp_path: Path, command: list[str], env: dict[str, str], for_s: str = "60"
) -> dict[str, Any]:
    """`torchtop run --headless` on `command` with `env` added; its JSON report."""
    report = tmp_path / "report.json"
    options = ["--headless", "--for", for_s, "--run-dir", str(tmp_path / "run"), "--report"]
    result = subprocess.run(
        [sys.executable, "-m", "torchtop", "run", *options, str(report), "--", *command],
        capture_output=True, text=True, timeout=300, env={**os.environ, **WINDOW_EARLY, **env},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    return json.loads(report.read_text())  # type: ignore[no-any-return]


def offered_knobs(findings: list[dict[str, Any]]) -> set[str]:
    return {fix["knob"] for finding in findings for fix in finding["fixes"]}


def rules_of(findings: list[dict[str, Any]]) -> list[str]:
    return [finding["rule"] for finding in findings]


@pytest.fixture(scope="module")
def ddp_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], Path]:
    """`torchtop run` on the 2-rank math job under torchrun: its report and run folder."""
    folder = tmp_path_factory.mktemp("ddp_math")
    report = run_report(folder, torchrun(DDP_MATH), {"STEPS": "150"})
    return report, folder / "run"


@pytest.mark.slow
def test_run_offers_no_thread_or_pinning_fix_to_two_ranks_on_two_cores_with_torchruns_one_thread(
    ddp_run: tuple[dict[str, Any], Path],
) -> None:
    report, run_dir = ddp_run
    state = load_run(run_dir)
    ranks = state.training_processes
    assert len(ranks) == 2
    for rank in ranks:
        assert rank.settings is not None and rank.settings.threads is not None
        assert rank.settings.threads.omp_num_threads_env == "1", "torchrun's own setting"
        assert rank.settings.threads.torch_num_threads == 1
    assert "cpu-math-bound" in rules_of(report["findings"]), report["verdict"]
    assert report["metrics"]["local_ranks"] == 2
    assert report["metrics"]["rank_cores"] == max(1, len(os.sched_getaffinity(0)) // 2)
    assert not offered_knobs(report["findings"]) & THREAD_KNOBS, report["findings"]


@pytest.mark.slow
def test_the_dashboards_snapshot_of_the_same_run_offers_no_thread_or_pinning_fix(
    ddp_run: tuple[dict[str, Any], Path],
) -> None:
    _, run_dir = ddp_run
    snapshot = LiveMonitor(run_dir, TREE).tick()
    findings = snapshot.report.verdict.findings
    assert "cpu-math-bound" in [f.rule for f in findings], snapshot.report.verdict
    knobs = {fix.knob for finding in findings for fix in finding.fixes}
    assert not knobs & THREAD_KNOBS, findings
    values = [fix.value for finding in findings for fix in finding.fixes]
    assert not any(isinstance(v, str) and "cores" in v for v in values), values


@pytest.mark.slow
def test_a_ddp_model_whose_gradients_fit_one_bucket_is_not_offered_a_bucket_size(
    ddp_run: tuple[dict[str, Any], Path],
) -> None:
    _, run_dir = ddp_run
    main = load_run(run_dir).training_processes[0]
    assert main.settings is not None and isinstance(main.settings.ddp, DdpSettings)
    ddp = main.settings.ddp
    # 3 x Linear(256, 256) in float32: weights and biases, as DDP's logging data counts them.
    assert ddp.gradient_bytes == 3 * (256 * 256 + 256) * 4
    assert ddp.bucket_count == 1
    verdict = _with_communication(main.settings, main.argv)
    overlap = next(f for f in verdict.findings if f.rule == "communication-not-overlapped")
    assert "ddp.bucket_cap_mb" not in [fix.knob for fix in overlap.fixes]


@pytest.mark.slow
def test_a_ddp_model_of_50_mb_is_offered_smaller_buckets_at_its_ddp_line(tmp_path: Path) -> None:
    run_report(tmp_path, torchrun(DDP_BIG), {"STEPS": "12"})
    main = load_run(tmp_path / "run").training_processes[0]
    assert main.settings is not None and isinstance(main.settings.ddp, DdpSettings)
    assert main.settings.ddp.gradient_bytes == 12 * (1024 * 1024 + 1024) * 4
    verdict = _with_communication(main.settings, main.argv)
    overlap = next(f for f in verdict.findings if f.rule == "communication-not-overlapped")
    fix = next(fix for fix in overlap.fixes if fix.knob == "ddp.bucket_cap_mb")
    line = next(
        n for n, text in enumerate(DDP_BIG.read_text().splitlines(), 1)
        if "DistributedDataParallel(" in text and not text.startswith(("from", "import"))
    )  # fmt: skip
    assert fix.where is not None and fix.where.startswith(f"{DDP_BIG}:{line}: model = "), fix


def _with_communication(settings: Any, argv: Sequence[str] | None) -> Any:
    """The verdict on the job's own recorded settings with communication planted not to
    overlap (a CPU job's gloo all-reduce overlaps as the machine's load decides)."""
    from torchtop.assess.node_share import ddp_metrics

    metrics: dict[str, Any] = {
        "steps_count": 20,
        "communication_share": 0.6,
        "comm_overlap_fraction": 0.05,
        **ddp_metrics(settings.ddp),
    }
    machine = dataclasses.replace(cached_machine(), local_ranks=2)
    verdict = diagnose(TREE, metrics)
    return resolve_verdict(verdict, settings, machine, metrics, argv)


@pytest.fixture(scope="module")
def bare_job() -> Iterator[Job]:
    """The math job under torchrun, without torchtop; runs until the module's tests end."""
    with started(torchrun(DDP_MATH)) as running:
        yield running


@pytest.mark.slow
def test_attach_on_the_launcher_offers_no_thread_fix_and_never_prints_a_value_in_words(
    bare_job: Job, tmp_path: Path
) -> None:
    _, report = attach(bare_job.process.pid, "15", tmp_path / "run")
    attached = report["source"]["attached"]
    assert [r["omp_num_threads"] for r in attached["ranks"]] == ["1", "1"]
    assert "cpu-math-bound" in rules_of(report["findings"]), report["findings"]
    assert not offered_knobs(report["findings"]) & THREAD_KNOBS, report["findings"]
    for finding in report["findings"]:
        for fix in finding["fixes"]:
            assert "cores" not in str(fix["value"]), fix


@pytest.mark.slow
def test_after_omp_proc_bind_close_one_process_is_not_called_oversubscribed(
    tmp_path: Path,
) -> None:
    cores = len(os.sched_getaffinity(0))
    command = [sys.executable, str(THREADED), "--steps", "80"]
    report = run_report(tmp_path, command, {"OMP_PROC_BIND": "close"})
    threads = load_run(tmp_path / "run").training_processes[0].settings
    assert threads is not None and threads.threads is not None
    assert threads.threads.omp_proc_bind_env == "close"
    # The process was started on every core; OpenMP then pinned its main thread to one.
    assert threads.threads.usable_cores == cores
    assert report["metrics"]["torch_num_threads"] == bare_torch_threads()
    assert "thread-oversubscription" not in rules_of(report["findings"]), report["findings"]
    assert "env.OMP_PROC_BIND" not in offered_knobs(report["findings"]), "already in effect"


def test_a_job_pinned_by_openmp_is_told_the_cores_it_was_started_on() -> None:
    """The outside truth of the bug: OpenMP pins the main thread as torch loads."""
    code = (
        "import os, torch; print(len(os.sched_getaffinity(0)));"
        "torch.randn(512, 512) @ torch.randn(512, 512);"  # starts the OpenMP pool
        "from torchtop.runs.node import process_cpus; print(len(process_cpus(os.getpid())));"
        "print(torch.get_num_threads())"
    )
    env = {**os.environ, "OMP_PROC_BIND": "close"}
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env
    )
    main_thread, process, pool = (int(n) for n in result.stdout.split())
    if pool < 2:  # torch counts physical cores: two SMT siblings give one thread, no pool
        pytest.skip(f"torch runs {pool} thread here: nothing to pin apart")
    assert main_thread == 1, "libgomp binds the initial thread to the first place"
    assert process == pool, "its pool's threads are pinned each to another core"
