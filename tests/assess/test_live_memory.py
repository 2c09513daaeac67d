"""Memory live, from the agent's step records: a near-full device fires memory-near-capacity
and feeds the batch-size prediction; a CPU job's memory is its RSS alone."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import msgspec
import psutil

from tests.conftest import CONTEXT, WORKLOADS
from tests.fake_run import FakeRun
from tests.fakes.fake_torch_cuda import FakeCuda
from tests.tables import tables
from tests.workloads.grows_memory import GROW_STEPS, HOLD_STEPS, STEP_BYTES
from torchtop.agent.memory_probe import MemoryProbe
from torchtop.analysis.summary import analyze_trace
from torchtop.assess.run import assess
from torchtop.diagnosis.rules import load_rules
from torchtop.report.contract import report_to_json
from torchtop.runs.journal import JournalReader
from torchtop.runs.records import GpuDevice, GpuProcess, GpuSample, Hello, Settings, Step
from torchtop.runs.state import load_run
from torchtop.traces import read_trace

GIB = 2**30
PID = 100
GPU_BOUND = "ns_resolution_trace"
JOBS = WORKLOADS


def _cuda_job(fake_run: FakeRun, cuda: FakeCuda, activations: int, steps: int = 20) -> None:
    """A job whose every step holds `activations` bytes over 10 GiB of weights and state,
    its step ends read by the agent's probe."""
    agent = fake_run.agent(PID)
    agent.write(Hello(t=fake_run.t, pid=PID))
    agent.write(Settings(t=fake_run.t, device="cuda:0"))
    probe = MemoryProbe(cuda)
    cuda.allocate(10 * GIB)
    for i in range(steps):
        cuda.allocate(activations)
        cuda.free(activations)
        fake_run.t += 0.5
        step = Step(t=fake_run.t, step=i, wall_s=0.5, data_wait_s=0.0)
        for name, value in probe.read().items():
            setattr(step, name, value)
        agent.write(step)


def test_a_near_full_device_fires_memory_near_capacity_live(
    fake_run: FakeRun, shared: Path
) -> None:
    cuda = FakeCuda(total_memory=80 * GIB)
    _cuda_job(fake_run, cuda, activations=64 * GIB)
    # The agent's window of a GPU-bound job (a V100 busy 97%): the verdict `gpu`, under which
    # the rule is looked at; the window itself recorded no memory.
    window = analyze_trace(read_trace(next((shared / "hta" / GPU_BOUND).glob("*.json.gz"))))
    assert not window.memory and "memory_peak_share" not in window.metrics
    report = assess(load_run(fake_run.layout.root), {PID: window}, load_rules(), context=CONTEXT)
    assert report.verdict.bottleneck == "gpu"
    assert report.job.metrics["memory_peak_share"] == 74 / 80
    rules = {f.rule: f for f in report.verdict.findings}
    assert "memory-near-capacity" in rules, report.verdict
    assert rules["memory-near-capacity"].evidence["memory_peak_bytes"] == 74 * GIB
    # (80 - 10) / (74 - 10): activations grow with the batch, the 10 GiB does not.
    assert report.job.metrics["memory_batch_factor_max"] == 70 / 64


def test_a_device_with_room_stays_quiet_and_predicts_how_much_larger_a_batch_fits(
    fake_run: FakeRun,
) -> None:
    _cuda_job(fake_run, FakeCuda(total_memory=80 * GIB), activations=10 * GIB)
    report = assess(load_run(fake_run.layout.root), {}, load_rules(), context=CONTEXT)
    assert "memory-near-capacity" not in {f.rule for f in report.verdict.findings}
    (entry,) = [d for d in report.job.memory if d.device == "cuda:0"]
    assert (entry.peak_allocated_bytes, entry.capacity_bytes) == (20 * GIB, 80 * GIB)
    assert entry.persistent_bytes == 10 * GIB
    assert entry.headroom_bytes == 60 * GIB
    assert entry.batch_factor_max == 7.0
    assert entry.peak_step == 0  # every step peaks alike: the first holds it
    assert len(entry.curve) == 20


def test_the_memory_section_shows_nvml_s_reading_beside_the_allocator_s(
    fake_run: FakeRun,
) -> None:
    _cuda_job(fake_run, FakeCuda(total_memory=80 * GIB), activations=10 * GIB)
    used = 21 * GIB  # the allocator's 20 GiB and CUDA's context
    sample = GpuSample(
        t=fake_run.t,
        devices=[GpuDevice(index=0, memory_used_bytes=used + GIB, memory_total_bytes=80 * GIB)],
        processes=[GpuProcess(pid=PID, device_index=0, memory_used_bytes=used)],
    )
    with open(fake_run.layout.samples("gpu"), "ab") as out:
        out.write(msgspec.json.encode(sample) + b"\n")
    document = report_to_json(
        assess(load_run(fake_run.layout.root), {}, load_rules(), context=CONTEXT)
    )
    (cuda,) = [d for d in document["memory"] if d["device"] == "cuda:0"]
    assert cuda["source"] == "agent"
    assert cuda["nvml_used_peak_bytes"] == used
    assert cuda["peak_allocated_bytes"] == 20 * GIB


def test_a_cpu_job_s_memory_is_its_rss_and_no_cuda_figure_is_made_up(fake_run: FakeRun) -> None:
    fake_run.hello(PID)
    agent = fake_run.agent(PID)
    for i, rss in enumerate([300, 310, 340, 320]):
        fake_run.t += 0.1
        agent.write(Step(t=fake_run.t, step=i, wall_s=0.1, rss_bytes=rss * 2**20))
    report = assess(load_run(fake_run.layout.root), {}, load_rules(), context=CONTEXT)
    (host,) = report.job.memory
    assert (host.device, host.source) == ("host", "agent")
    assert (host.peak_allocated_bytes, host.peak_step) == (340 * 2**20, 2)
    assert host.capacity_bytes is None and host.batch_factor_max is None
    assert "memory_peak_share" not in report.job.metrics
    assert report.job.metrics["rss_peak_bytes"] == 340 * 2**20


def test_a_real_job_s_rss_per_step_agrees_with_psutil_s_reading_of_it(tmp_path: Path) -> None:
    run_dir, report_path = tmp_path / "run", tmp_path / "report.json"
    command = [sys.executable, "-m", "torchtop", "run", "--headless", "--run-dir", str(run_dir)]
    command += ["--report", str(report_path), "--", sys.executable, str(JOBS / "grows_memory.py")]
    env = {k: v for k, v in os.environ.items() if not k.startswith("TORCHTOP_")}
    launcher = subprocess.Popen(command, cwd=tmp_path, env=env, stdout=subprocess.DEVNULL)
    samples = _sample_job_rss(run_dir, launcher)
    assert launcher.wait(timeout=240) == 0
    steps = [
        s
        for s in tables(JournalReader(next((run_dir / "events").glob("agent-*.jsonl"))).read_new())
        if s["kind"] == "step" and "rss_bytes" in s
    ]
    assert len(steps) >= GROW_STEPS + HOLD_STEPS - 1
    held = [s["rss_bytes"] for s in steps[GROW_STEPS + 1 :]]
    # Once the job holds its memory, psutil's readings over those steps match the agent's.
    during = [rss for t, rss in samples if steps[GROW_STEPS + 1]["t"] <= t <= steps[-1]["t"]]
    assert len(during) >= 5, samples
    for rss in during:
        assert abs(rss - held[-1]) < 0.02 * held[-1], (rss, held)
    # Growing, each step's figure rises by the 32 MiB the step kept (within allocator noise).
    grown = steps[GROW_STEPS - 1]["rss_bytes"] - steps[0]["rss_bytes"]
    assert abs(grown - (GROW_STEPS - 1) * STEP_BYTES) < 8 * 2**20, grown
    (host,) = [m for m in json.loads(report_path.read_text())["memory"] if m["device"] == "host"]
    assert abs(host["peak_allocated_bytes"] - max(rss for _, rss in samples)) < 0.02 * max(
        rss for _, rss in samples
    )


def _sample_job_rss(run_dir: Path, launcher: subprocess.Popen[bytes]) -> list[tuple[float, int]]:
    """(time, RSS) of the job as psutil reads it, every 50 ms while it runs."""
    deadline = time.monotonic() + 120
    pid = None
    while pid is None and time.monotonic() < deadline and launcher.poll() is None:
        found = sorted((run_dir / "events").glob("agent-*.jsonl")) if run_dir.exists() else []
        pid = int(found[0].stem.split("-")[1]) if found else None
        time.sleep(0.05)
    assert pid is not None, "the job's agent never wrote"
    samples = []
    try:
        job = psutil.Process(pid)
        while launcher.poll() is None:
            samples.append((time.time(), job.memory_info().rss))
            time.sleep(0.05)
    except psutil.NoSuchProcess:
        pass
    return samples
