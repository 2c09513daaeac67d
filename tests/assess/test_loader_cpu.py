"""`loader_cpu_share`: the CPU part of the loading's time, in process or from the workers."""

from __future__ import annotations

from torchtop.assess.loader_cpu import worker_busy_share
from torchtop.assess.run import in_process_cpu_share
from torchtop.runs.records import HostProcess, HostSample
from torchtop.runs.state import StepRecord


def step(wait_s: float | None, cpu_s: float | None) -> StepRecord:
    return StepRecord(1, 0, 0.0, 0.1, wait_s, None, None, data_cpu_s=cpu_s)


def test_in_process_it_is_the_stepping_threads_cpu_over_its_wait() -> None:
    assert in_process_cpu_share([step(0.1, 0.09), step(0.1, 0.07)]) == 0.8
    assert in_process_cpu_share([step(0.1, 0.09), step(0.1, None)]) is None
    assert in_process_cpu_share([step(0.001, 0.001)]) is None  # too short a wait to split


def test_with_workers_it_is_each_workers_busy_fraction_of_a_core() -> None:
    def sample(*worker_pcts: float | None) -> HostSample:
        main = HostProcess(pid=1, role="main", cpu_pct=190.0)
        workers = [
            HostProcess(pid=2 + i, role="worker", cpu_pct=p) for i, p in enumerate(worker_pcts)
        ]
        return HostSample(t=0.0, processes=[main, *workers])

    assert worker_busy_share([sample(10.0, 30.0), sample(20.0, None)]) == 0.2
    assert worker_busy_share([sample(), sample(None)]) is None
