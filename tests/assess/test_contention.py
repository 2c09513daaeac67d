"""The contention metrics from host samples: who else is busy, and the job's run-queue wait."""

from __future__ import annotations

import pytest

from torchtop.assess.contention import RECENT_SAMPLES, contention_metrics, runqueue_wait_share
from torchtop.runs.records import HostProcess, HostSample

JOB_PID = 100
HOG = "python -c while True: pass"


def sample(
    t: float,
    others: dict[int, float],
    job_cpu_pct: float | None = 190.0,
    job_wait_pct: float | None = 10.0,
    others_cpu_pct: float | None = None,
    steal_pct: float | None = 0.0,
) -> HostSample:
    """One host sample: the job's main process, and the others listed (pid -> % of a core)."""
    listed = [
        HostProcess(pid=pid, name="python", cpu_pct=pct, command=f"{HOG} #{pid}")
        for pid, pct in others.items()
    ]
    total = others_cpu_pct if others_cpu_pct is not None else sum(others.values())
    return HostSample(
        t=t,
        processes=[
            HostProcess(
                pid=JOB_PID, role="main", cpu_pct=job_cpu_pct, runqueue_wait_pct=job_wait_pct
            )
        ],
        others_cpu_pct=total,
        others=listed,
        steal_pct=steal_pct,
    )


def test_two_busy_processes_through_the_window_are_named_with_their_cores() -> None:
    host = [sample(t, {7: 50.0, 8: 48.0}, job_cpu_pct=100.0, job_wait_pct=100.0) for t in range(15)]
    metrics = contention_metrics(host)
    assert metrics["other_cores_used"] == pytest.approx(0.98)
    assert metrics["contender_cores"] == pytest.approx(0.98)
    assert metrics["runqueue_wait_share"] == pytest.approx(0.5)
    named = str(metrics["contenders"])
    assert named.startswith(f"pid 7 ({HOG} #7): 0.50 cores, pid 8 ")
    assert metrics["host_steal_share"] == 0.0


def test_a_process_busy_for_a_few_seconds_of_the_window_is_no_contender() -> None:
    # Another test's short job: busy 4 s of 15 (below the 60% a contender needs).
    host = [sample(t, {9: 100.0} if t < 4 else {}) for t in range(15)]
    metrics = contention_metrics(host)
    assert metrics["contender_cores"] == 0.0
    assert metrics["contenders"] == "none"
    assert metrics["other_cores_used"] == pytest.approx(4 / 15, abs=0.01)


def test_many_idle_daemons_add_to_the_others_cores_but_name_no_contender() -> None:
    host = [sample(t, {}, others_cpu_pct=30.0) for t in range(15)]  # none above 5% alone
    metrics = contention_metrics(host)
    assert metrics["other_cores_used"] == pytest.approx(0.3)
    assert metrics["contender_cores"] == 0.0


def test_only_the_newest_samples_count() -> None:
    old = [sample(t, {7: 100.0}) for t in range(30)]
    new = [sample(30 + t, {}) for t in range(RECENT_SAMPLES)]
    assert contention_metrics(old + new)["contender_cores"] == 0.0
    assert contention_metrics(old)["contender_cores"] == pytest.approx(1.0)


def test_more_than_three_contenders_are_counted_after_the_three_busiest() -> None:
    busy = {pid: 40.0 + pid for pid in range(1, 6)}
    named = str(contention_metrics([sample(t, busy) for t in range(10)])["contenders"])
    assert named.count("pid ") == 3 and named.startswith("pid 5 ")
    assert named.endswith("and 2 more using 0.83 cores")


def test_nothing_is_measured_without_enough_samples_of_the_others() -> None:
    metrics = contention_metrics([sample(t, {7: 100.0}) for t in range(2)])
    assert metrics["other_cores_used"] is None and metrics["contender_cores"] is None
    assert metrics["contenders"] is None
    # A folder written before the others were sampled: no reading at all.
    bare = [HostSample(t=t, processes=[HostProcess(pid=JOB_PID)]) for t in range(15)]
    assert all(value is None for value in contention_metrics(bare).values())


def test_run_queue_wait_share_is_wait_over_wait_plus_cpu_of_the_measured_processes() -> None:
    host = [
        sample(0, {}, job_cpu_pct=150.0, job_wait_pct=50.0),
        sample(1, {}, job_cpu_pct=None, job_wait_pct=400.0),  # first reading: skipped
        sample(2, {}, job_cpu_pct=50.0, job_wait_pct=150.0),
    ]
    assert runqueue_wait_share(host) == pytest.approx(0.5)
    assert runqueue_wait_share([sample(0, {}, 0.0, 0.0)]) is None  # an idle job: no share
