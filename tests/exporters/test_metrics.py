"""`--metrics`: the Prometheus families built from a tick, and scraped from a real endpoint."""

from __future__ import annotations

import io
import os
import sys
import time
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry
from prometheus_client.core import Metric

from tests.conftest import WORKLOADS
from tests.exporters.scrape import one, scrape, values
from tests.fake_run import FakeRun
from torchtop.assess.snapshot import Snapshot
from torchtop.diagnosis.rules import load_rules
from torchtop.exporters.metrics import (
    LONG_RUN_METRICS,
    METRICS,
    RunMetrics,
    metric_name,
    snapshot_families,
)
from torchtop.exporters.metrics_server import serve_metrics
from torchtop.jobs.job import Output, start
from torchtop.live.watch import LiveMonitor
from torchtop.report.contract import BREAKDOWN_KEYS, steps_per_s
from torchtop.runs.journal import JournalWriter
from torchtop.runs.node import node_name
from torchtop.runs.records import GpuDevice, GpuSample

JOBS = WORKLOADS
WINDOW_EARLY = {"TORCHTOP_WINDOW_FIRST_STEP": "3", "TORCHTOP_WINDOW_STEPS": "4"}


def _with_gpu_sample(fake_run: FakeRun) -> None:
    writer = JournalWriter(fake_run.layout.samples("gpu"))
    full = GpuDevice(
        index=0,
        utilization_gpu_pct=37,
        memory_used_bytes=2e9,
        memory_total_bytes=16e9,
        power_w=180.5,
        temperature_c=61,
    )
    writer.write(GpuSample(t=fake_run.t, devices=[full, GpuDevice(index=1, temperature_c=40)]))
    writer.close()


def _tick(fake_run: FakeRun) -> Snapshot:
    return LiveMonitor(fake_run.layout.root, load_rules(None)).tick()


def test_every_metric_of_the_catalogue_comes_from_a_tick_with_steps_and_a_gpu(
    fake_run: FakeRun,
) -> None:
    fake_run.hello(100)
    fake_run.steps(100, 20, wall_s=0.2, data_wait_s=0.15)
    _with_gpu_sample(fake_run)
    snapshot = _tick(fake_run)
    families = snapshot_families(snapshot, "run-a", "node-a", 1234.5)
    # MFU needs a profiler window with shapes and a peak: tests/exporters/test_metrics_mfu.py;
    # the long run's, memory that grows or stalls that recur: tests/assess/test_long_run_jobs.py
    assert {metric_name(f) for f in families} == set(METRICS) - {"torchtop_mfu", *LONG_RUN_METRICS}
    by_name = {metric_name(f): f for f in families}
    for family in families:
        spec = METRICS[metric_name(family)]
        assert family.type == spec.kind
        for sample in family.samples:
            # A summary's _sum and _count carry its labels without the quantile.
            assert set(sample.labels) <= set(spec.labels), sample
            assert set(sample.labels) >= set(spec.labels) - {"quantile"}
    gpu = [
        (s.name, s.labels["gpu"], s.value) for f in families for s in f.samples if "gpu" in s.labels
    ]
    assert ("torchtop_gpu_utilization_ratio", "0", 0.37) in gpu
    assert ("torchtop_gpu_power_watts", "0", 180.5) in gpu
    # Device 1 reports only its temperature: the rest is absent, never 0.
    assert [(name, value) for name, device, value in gpu if device == "1"] == [
        ("torchtop_gpu_temperature_celsius", 40.0)
    ]
    wait = by_name["torchtop_dataloader_wait_ratio"].samples
    assert [s.value for s in wait] == [pytest.approx(0.75)]
    assert wait[0].labels == {"run": "run-a", "node": "node-a", "rank": ""}
    (info,) = by_name["torchtop_rank_info"].samples
    assert (info.name, info.value) == ("torchtop_rank_info", 1)
    assert info.labels == {"run": "run-a", "node": "node-a", "rank": "", "pid": "100"}


def test_the_verdict_is_one_for_the_class_shown_and_zero_for_the_others(
    fake_run: FakeRun,
) -> None:
    fake_run.hello(100)
    fake_run.steps(100, 20, wall_s=0.2, data_wait_s=0.15)
    snapshot = _tick(fake_run)
    families = snapshot_families(snapshot, "r", "n", 0.0)
    verdict = {
        s.labels["bottleneck"]: s.value
        for f in families
        if f.name == "torchtop_verdict"
        for s in f.samples
    }
    assert verdict == {
        c: float(c == snapshot.shown.bottleneck)
        for c in ("dataloader", "memcpy", "cpu", "gpu", "communication", "unknown")
    }
    assert sum(verdict.values()) == 1.0


def test_a_run_with_no_step_yet_exposes_no_step_figures_and_no_breakdown(
    fake_run: FakeRun,
) -> None:
    fake_run.hello(100)
    families = snapshot_families(_tick(fake_run), "r", "n", 0.0)
    names = {f.name for f in families}
    assert not names & {
        "torchtop_step_seconds",
        "torchtop_breakdown_ratio",
        "torchtop_steps_per_second",
    }
    assert "torchtop_verdict" in names


def test_a_tick_that_cannot_be_mapped_keeps_the_last_good_metrics_and_never_raises(
    fake_run: FakeRun,
) -> None:
    fake_run.hello(100)
    fake_run.steps(100, 20, wall_s=0.2, data_wait_s=0.15)
    collector = RunMetrics("r", "n", clock=lambda: 1.0)
    snapshot = _tick(fake_run)
    collector.publish(snapshot)
    before = list(collector.collect())

    def broken() -> float:
        raise RuntimeError("clock gone")

    collector.clock = broken
    collector.publish(snapshot)
    assert collector.failures == 1
    assert list(collector.collect()) == before


def test_a_two_rank_torchrun_job_is_scraped_with_both_ranks_and_the_reports_figures(
    tmp_path: Path,
) -> None:
    run_dir = tmp_path / "run"
    command = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc_per_node=2",
        str(JOBS / "ddp_comm.py"),
    ]
    env = {**os.environ, **WINDOW_EARLY}
    job = start(command, run_dir, "run", env=env, output=Output.log(tmp_path / "job.log"))
    node = node_name({"TORCHTOP_NODE": "node-a"})
    collector = RunMetrics(run_dir.name, node)
    registry = CollectorRegistry()
    registry.register(collector)
    server = serve_metrics("127.0.0.1:0", registry, env={}, stream=io.StringIO())
    monitor = LiveMonitor(run_dir, load_rules(None), job=job, on_tick=collector.publish)
    try:
        deadline = time.monotonic() + 240  # a hung job fails here, not the suite
        while not monitor.tick().finished and time.monotonic() < deadline:
            time.sleep(0.5)
        snapshot = monitor.tick()  # everything the ranks wrote before they exited
        samples = scrape(server.url)
    finally:
        monitor.finish()
        server.close()
    assert job.poll() == 0, (tmp_path / "job.log").read_text()[-2000:]
    report = snapshot.report
    assert len(report.ranks) == 2
    pids = {p.rank: str(p.pid) for p in snapshot.state.training_processes}
    assert {s.labels["rank"] for s in samples if s.name == "torchtop_steps_per_second"} == {
        "0",
        "1",
    }
    for rank in report.ranks:
        metrics = rank.analysis.metrics
        labels = {"run": "run", "node": "node-a", "rank": str(rank.analysis.rank)}
        assert one(samples, "torchtop_rank_info", pid=pids[rank.analysis.rank], **labels) == 1
        count = one(samples, "torchtop_step_seconds_count", **labels)
        assert count == metrics["steps_count"] and count > 0
        mean_s = one(samples, "torchtop_step_seconds_sum", **labels) / count
        assert mean_s * 1000 == pytest.approx(metrics["step_mean_ms"])
        p95 = one(samples, "torchtop_step_seconds", quantile="0.95", **labels)
        assert p95 * 1000 == pytest.approx(metrics["step_p95_ms"])
        p50 = one(samples, "torchtop_step_seconds", quantile="0.5", **labels)
        assert p50 * 1000 == pytest.approx(metrics["step_p50_ms"])
        rate = one(samples, "torchtop_steps_per_second", **labels)
        assert rate == pytest.approx(steps_per_s(metrics))
        for category in BREAKDOWN_KEYS:
            share = one(samples, "torchtop_breakdown_ratio", category=category, **labels)
            assert share == pytest.approx(rank.analysis.breakdown.get(category, 0.0))
    # The window was captured: communication shows in both ranks' breakdowns.
    assert all(v > 0 for v in values(samples, "torchtop_breakdown_ratio", category="communication"))
    assert one(samples, "torchtop_verdict", bottleneck=snapshot.shown.bottleneck) == 1.0


def test_a_rank_restarted_under_a_new_pid_goes_on_in_the_same_series_its_info_naming_the_new_pid(
    fake_run: FakeRun,
) -> None:
    fake_run.hello(100, rank=0)
    fake_run.hello(101, rank=1)
    for pid in (100, 101):
        fake_run.steps(pid, 20, wall_s=0.2, data_wait_s=0.15)
    monitor = LiveMonitor(fake_run.layout.root, load_rules(None))
    before = snapshot_families(monitor.tick(), "r", "n", 0.0)
    fake_run.t += 5.0  # torchrun restarts both ranks: new pids, the same numbers
    fake_run.hello(200, rank=0)
    fake_run.hello(201, rank=1)
    for pid in (200, 201):
        fake_run.steps(pid, 20, wall_s=0.2, data_wait_s=0.15)
    after = snapshot_families(monitor.tick(), "r", "n", 0.0)

    def series(families: list[Metric], name: str) -> list[dict[str, str]]:
        return [s.labels for f in families for s in f.samples if s.name == name]

    rank_series = [{"run": "r", "node": "n", "rank": rank} for rank in ("0", "1")]
    for name in ("torchtop_steps_per_second", "torchtop_dataloader_wait_ratio"):
        assert series(before, name) == series(after, name) == rank_series, name
    info = "torchtop_rank_info"
    assert [s["pid"] for s in series(before, info)] == ["100", "101"]
    assert [s["pid"] for s in series(after, info)] == ["200", "201"]
