"""Device memory over the long run, from the agent's memory probe on a fake caching allocator
(no GPU here): tensors kept every step are device-memory-growth at their rate, with the time
left to the device's capacity; a cache that holds far more than any step used is
fragmentation; a job whose allocations come back each step has neither."""

from __future__ import annotations

import pytest

from tests.conftest import CONTEXT
from tests.fake_run import FakeRun
from tests.fakes.fake_torch_cuda import FakeCuda
from torchtop.agent.memory_probe import MemoryProbe
from torchtop.assess.run import assess
from torchtop.diagnosis.rules import load_rules
from torchtop.model.report import Report
from torchtop.runs.records import Hello, Settings, Step
from torchtop.runs.state import load_run

GIB, MIB = 2**30, 2**20
PID = 100
STEPS = 120
WALL_S = 0.5


def _job(fake_run: FakeRun, cuda: FakeCuda, kept_bytes: int, cached_bytes: int = 0) -> Report:
    """Each step allocates 1 GiB of activations and frees it, keeping `kept_bytes`; a block of
    `cached_bytes` was allocated and freed once, before the steps (the cache keeps it)."""
    agent = fake_run.agent(PID)
    agent.write(Hello(t=fake_run.t, pid=PID))
    agent.write(Settings(t=fake_run.t, device="cuda:0"))
    probe = MemoryProbe(cuda)
    cuda.allocate(10 * GIB)
    cuda.allocate(cached_bytes)
    cuda.free(cached_bytes)
    for number in range(STEPS):
        cuda.allocate(GIB + kept_bytes)
        cuda.free(GIB)
        fake_run.t += WALL_S
        step = Step(t=fake_run.t, step=number, wall_s=WALL_S, data_wait_s=0.0)
        for name, value in probe.read().items():
            setattr(step, name, value)
        agent.write(step)
    return assess(load_run(fake_run.layout.root), {}, load_rules(), context=CONTEXT)


def test_tensors_kept_each_step_are_device_memory_growth_with_the_time_to_capacity(
    fake_run: FakeRun,
) -> None:
    cuda = FakeCuda(total_memory=80 * GIB)
    report = _job(fake_run, cuda, kept_bytes=64 * MIB)
    found = {f.rule: f for f in report.verdict.findings}
    growth = found["device-memory-growth"].evidence
    assert growth["cuda_growth_bytes_per_step"] == pytest.approx(64 * MIB, rel=0.01)
    # Two steps a second: 128 MiB a second into what the device has left of what is reserved.
    left_s = (80 * GIB - cuda.reserved) / (128 * MIB)
    assert growth["cuda_growth_seconds_to_limit"] == pytest.approx(left_s, rel=0.02)
    assert "memory-fragmentation" not in found


def test_a_cache_far_above_every_step_is_fragmentation_and_no_growth(fake_run: FakeRun) -> None:
    report = _job(fake_run, FakeCuda(total_memory=80 * GIB), kept_bytes=0, cached_bytes=20 * GIB)
    found = {f.rule: f for f in report.verdict.findings}
    assert "device-memory-growth" not in found
    evidence = found["memory-fragmentation"].evidence
    # Reserved 30 GiB (10 GiB held and the 20 GiB block, cached), the step's peak 11 GiB.
    assert evidence["cuda_fragmentation_bytes"] == pytest.approx(19 * GIB, rel=0.01)
    assert evidence["cuda_fragmentation_share"] == pytest.approx(19 / 30, rel=0.01)
    (fix,) = found["memory-fragmentation"].fixes
    assert fix.value == "expandable_segments:True"


def test_allocations_that_come_back_each_step_are_neither(fake_run: FakeRun) -> None:
    report = _job(fake_run, FakeCuda(total_memory=80 * GIB), kept_bytes=0)
    rules = {f.rule for f in report.verdict.findings}
    assert not rules & {"device-memory-growth", "memory-fragmentation"}
