"""MFU leaves torchtop the way the other live figures do: a real CPU job of known matmuls
(`workloads/matmul_job.py`) watched with a known CPU peak in the assessment's context, its
profiler window recording shapes; `torchtop_mfu` scraped from a real endpoint and read with
Prometheus's own parser, and `efficiency/mfu` read back by TensorBoard's own reader, both equal
to the report's MFU, which is FLOPs per step / step time / the peak, recomputed here."""

from __future__ import annotations

import dataclasses
import io
import os
import sys
import time
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry
from tensorboard.backend.event_processing.event_accumulator import SCALARS, EventAccumulator

from tests.conftest import WORKLOADS
from tests.exporters.scrape import one, scrape
from tests.workloads.matmul_job import FLOPS_PER_STEP
from torchtop.assess.context import read_context
from torchtop.assess.snapshot import Snapshot
from torchtop.diagnosis.rules import load_rules
from torchtop.exporters.metrics import RunMetrics
from torchtop.exporters.metrics_server import serve_metrics
from torchtop.exporters.tensorboard import TensorBoardLog
from torchtop.jobs.job import Output, start
from torchtop.live.watch import LiveMonitor
from torchtop.model.peak import MEASURED, Peak

PEAK = Peak("test CPU", {"fp32": 0.05}, 0.02, MEASURED, "a figure for the test")
WINDOW_EARLY = {"TORCHTOP_WINDOW_FIRST_STEP": "3", "TORCHTOP_WINDOW_STEPS": "4"}


def watch_until_mfu(tmp_path: Path, on_tick: list[RunMetrics | TensorBoardLog]) -> Snapshot:
    run_dir = tmp_path / "run"
    command = [sys.executable, str(WORKLOADS / "matmul_job.py"), "--seconds", "120"]
    env = {**os.environ, **WINDOW_EARLY}
    job = start(command, run_dir, "run", env=env, output=Output.log(tmp_path / "job.log"))
    context = dataclasses.replace(read_context(), cpu_peak=PEAK)

    def publish(snapshot: Snapshot) -> None:
        for sink in on_tick:
            sink.publish(snapshot)

    monitor = LiveMonitor(run_dir, load_rules(None), job=job, on_tick=publish, context=context)
    try:
        deadline = time.monotonic() + 120  # torch's import on a loaded machine, then a window
        while time.monotonic() < deadline:
            snapshot = monitor.tick()
            efficiency = snapshot.report.job.efficiency
            if snapshot.finished or (efficiency is not None and efficiency.mfu is not None):
                return snapshot
            time.sleep(0.5)
        pytest.fail("no efficiency within 120 s: " + (tmp_path / "job.log").read_text()[-2000:])
    finally:
        monitor.finish()


def test_the_mfu_of_known_matmuls_is_scraped_and_written_for_tensorboard(tmp_path: Path) -> None:
    collector = RunMetrics("run", "node-a")
    registry = CollectorRegistry()
    registry.register(collector)
    server = serve_metrics("127.0.0.1:0", registry, env={}, stream=io.StringIO())
    board = TensorBoardLog(tmp_path / "tensorboard", tmp_path / "run")
    try:
        snapshot = watch_until_mfu(tmp_path, [collector, board])
        samples = scrape(server.url)
    finally:
        server.close()
        board.close()
    efficiency = snapshot.report.job.efficiency
    assert efficiency is not None and efficiency.mfu is not None
    assert efficiency.flops_per_step == FLOPS_PER_STEP
    assert efficiency.step_mean_us is not None
    recomputed = FLOPS_PER_STEP / (efficiency.step_mean_us / 1e6) / (0.05 * 1e12)
    assert efficiency.mfu == pytest.approx(recomputed, rel=1e-9)
    scraped = one(samples, "torchtop_mfu", run="run", node="node-a", rank="")
    assert scraped == pytest.approx(efficiency.mfu, rel=1e-12)
    reader = EventAccumulator(str(tmp_path / "tensorboard" / "rank0"), size_guidance={SCALARS: 0})
    reader.Reload()
    written = reader.Scalars("efficiency/mfu")
    assert written and written[-1].value == pytest.approx(efficiency.mfu, rel=1e-6)
